"""CLI listings, error lines and exports never write stored control sequences to the terminal
(issue 15): a session name, a message or a file name can carry them. `--raw` keeps the bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from treechat.cli.main import main
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, UserMessage

# clipboard write, window title, clear screen, 8-bit CSI, bell, right-to-left override
EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[2J\x9b6n\x07\u202egnp.exe"
SHOWN = "␛]52;c;ZXZpbA==␇␛]0;pwned␇␛[2J<U+009B>6n␇<U+202E>gnp.exe"
FORBIDDEN = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0),
                          *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def safe(text: str) -> bool:
    return not (set(text) & FORBIDDEN)


@pytest.fixture(params=["sqlite", "jsonl"])
def place(request, tmp_path) -> tuple[list[str], str]:
    """(--home/--storage arguments, the id of a session named EVIL with an EVIL exchange)."""

    async def make() -> str:
        catalog = await open_catalog(request.param, tmp_path)
        try:
            storage = await catalog.create(cwd=str(tmp_path))
            session = await Session.open(storage)
            await session.append_message(UserMessage(content=f"zebra question {EVIL}"))
            await session.append_message(AssistantMessage(content=[TextContent(text=f"zebra answer {EVIL}\r\nend")],
                                                          provider="openai", model="m"))
            await catalog.rename(storage.session_id, f"name {EVIL}\nsecond line")
            return storage.session_id
        finally:
            await catalog.close()

    return ["--home", str(tmp_path), "--storage", request.param], asyncio.run(make())


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sessions_listing_shows_placeholders_on_one_line(capsys, place) -> None:
    home, _ = place
    code, out, _ = run(capsys, "sessions", *home)
    assert code == 0 and safe(out)
    assert out.count("\n") == 1 and "name ␛]52;c;ZXZpbA==␇" in out
    code, out, _ = run(capsys, "--raw", "sessions", *home)
    assert code == 0 and "\x1b]52;c;ZXZpbA==\x07" in out


def test_search_listing_shows_placeholders(capsys, place) -> None:
    home, _ = place
    code, out, _ = run(capsys, "search", "zebra", *home)
    assert code == 0 and safe(out)
    assert "name ␛]52" in out and out.count("\n") == 2
    code, out, _ = run(capsys, "search", "zebra", "--raw", *home)
    assert code == 0 and "\x1b]52" in out


@pytest.mark.parametrize("argv", [["sessions", "--json"], ["search", "zebra", "--json"], ["tree", "SID", "--json"],
                                  ["context", "SID", "--json"], ["export", "SID", "--format", "jsonl"]])
def test_json_outputs_escape_what_json_leaves_raw_and_keep_the_value(capsys, place, argv) -> None:
    home, sid = place
    code, out, err = run(capsys, *[sid if a == "SID" else a for a in argv], *home)
    assert code == 0, err
    assert safe(out.replace("\n", ""))
    values = [json.loads(line) for line in out.splitlines()] if argv[0] == "export" else [json.loads(out)]
    assert any(EVIL in text for text in strings(values))  # the same strings, escaped, not changed


def test_markdown_export_shows_placeholders_unless_raw(capsys, place, tmp_path) -> None:
    home, sid = place
    code, out, _ = run(capsys, "export", sid, "--format", "md", *home)
    assert code == 0 and safe(out)
    assert out.startswith(f"# name {SHOWN} second line\n")
    assert f"zebra answer {SHOWN}\nend" in out
    target = tmp_path / "out.md"
    assert run(capsys, "export", sid, "--format", "md", "-o", str(target), *home)[0] == 0
    assert safe(target.read_text(encoding="utf-8"))
    assert run(capsys, "--raw", "export", sid, "--format", "md", "-o", str(target), *home)[0] == 0
    assert f"zebra answer {EVIL}\r\nend" in target.read_bytes().decode("utf-8")


def test_error_lines_show_placeholders(capsys, tmp_path) -> None:
    code, out, err = run(capsys, "--home", str(tmp_path), "export", f"no-such-{EVIL}")
    assert code == 1 and out == ""
    assert safe(err) and err.count("\n") == 1 and "no-such-␛]52" in err
    code, _, err = run(capsys, "--home", str(tmp_path), "import", str(Path(tmp_path) / f"missing{EVIL}.jsonl"))
    assert code == 1 and safe(err) and err.count("\n") == 1 and "missing␛]52" in err


def test_half_a_surrogate_pair_is_stored_repaired_and_exports_with_or_without_raw(tmp_path) -> None:
    """A model can send half a surrogate pair as a JSON escape; neither the store nor a UTF-8 stdout
    can encode it: it is stored as U+FFFD, and exports (raw or not) write that."""
    import os
    import subprocess
    import sys

    async def make() -> str:
        catalog = await open_catalog("sqlite", tmp_path)
        try:
            storage = await catalog.create(cwd=str(tmp_path))
            session = await Session.open(storage)
            await session.append_message(UserMessage(content="half \ud83d pair"))
            return storage.session_id
        finally:
            await catalog.close()

    sid = asyncio.run(make())
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for flags in (["--raw"], []):
        done = subprocess.run([sys.executable, "-m", "treechat", "--home", str(tmp_path), *flags, "export", sid,
                               "--format", "md"], capture_output=True, env=env, timeout=60)
        assert done.returncode == 0 and done.stderr == b"", done.stderr.decode(errors="replace")
        assert "half \ufffd pair".encode() in done.stdout
