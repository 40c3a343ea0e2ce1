"""`treechat search` shows where a hit matched without printing the search's [[ ]] markers:
highlighted on a colour terminal, plain text into a pipe, as stored with --raw."""

from __future__ import annotations

import asyncio
import io

import pytest

from treechat.cli import snippets
from treechat.cli.main import main
from treechat.cli.snippets import MARK_OFF, MARK_ON, colour_wanted, snippet_line
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import UserMessage


@pytest.fixture
def home(tmp_path) -> list[str]:
    async def make() -> None:
        catalog = await open_catalog("sqlite", tmp_path)
        try:
            session = await Session.open(await catalog.create(cwd=str(tmp_path)))
            await session.append_message(UserMessage(content="where did the zebra\x1b[2J go after lunch"))
        finally:
            await catalog.close()

    asyncio.run(make())
    return ["--home", str(tmp_path), "--storage", "sqlite"]


def hit_line(capsys, *argv: str) -> str:
    assert main(["search", "zebra", *argv]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "zebra" in line]
    return line


def test_into_a_pipe_the_snippet_is_plain_text(capsys, home) -> None:
    line = hit_line(capsys, *home)
    assert line.endswith("user: where did the zebra␛[2J go after lunch")
    assert "[[" not in line and "\x1b" not in line


def test_on_a_colour_terminal_the_match_is_highlighted(capsys, home, monkeypatch) -> None:
    monkeypatch.setattr(snippets, "colour_wanted", lambda stream: True)
    line = hit_line(capsys, *home)
    assert f"where did the {MARK_ON}zebra{MARK_OFF}␛[2J go" in line
    assert line.count("\x1b") == 2  # ours alone: the stored escape is a placeholder


def test_raw_prints_the_snippet_as_stored(capsys, home) -> None:
    assert "where did the [[zebra]]\x1b[2J go" in hit_line(capsys, "--raw", *home)


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("tty", "env", "wanted"), [
    (True, {}, True), (False, {}, False), (True, {"NO_COLOR": "1"}, False), (True, {"TERM": "dumb"}, False),
])
def test_colour_only_on_a_terminal_that_wants_it(monkeypatch, tty, env, wanted) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert colour_wanted(Stream(tty)) is wanted


def test_a_long_snippet_is_cut_after_its_match() -> None:
    text = "a" * 30 + " [[needle]] " + "b" * 200
    line = snippet_line(text, 60, colour=False)
    assert len(line) == 60 and line.startswith("a" * 30 + " needle ") and line.endswith("…")
    long_match = snippet_line("x [[" + "n" * 90 + "]] tail", 50, colour=False)
    assert len(long_match) == 50 and long_match.startswith("x nnn") and long_match.endswith("…")
    assert snippet_line("no markers here\nat all", 100, colour=False) == "no markers here at all"
