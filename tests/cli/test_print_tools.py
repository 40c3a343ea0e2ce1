"""`-p` with the tools on by default (issue 37): a command or an edit the model asks for without
`--yes` gets the refusal it always got, and stderr says once, in one line, how to allow it or turn
the tools off; `--tools ''` sends none."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.fake_provider import FakeProvider
from tests.print_helper import print_run
from treechat.agent.tools.bash import NO_CONFIRM
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog

ONE_LINE = ("treechat: refused the model's shell command: -p asks no questions; --yes allows commands and edits in "
            "the working folder, --tools '' (or tools = [] in config.toml) turns the tools off\n")


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


async def run(fake, tmp_path, **kw):
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(tmp_path / "home", env=env)  # a fresh home: every tool on
    session = await Session.open(await MemoryCatalog().create())
    return await print_run("tidy up", session, model_ref="openai/fake-model", registry=ModelRegistry(settings, env=env),
                           settings=settings, cwd=str(tmp_path), **kw)


def calls(*made: tuple[str, dict]) -> list[dict]:
    return [{"id": f"c{i}", "name": name, "arguments": json.dumps(args)} for i, (name, args) in enumerate(made)]


async def test_a_refused_command_and_edit_are_said_once_in_one_line(fake, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("old\n")
    fake.script_openai(tool_calls=calls(("bash", {"command": "rm -rf build"}),
                                        ("edit", {"path": "notes.txt", "edits": [{"oldText": "old", "newText": "new"}]})))
    fake.script_openai(tool_calls=calls(("bash", {"command": "ls"})))
    fake.script_openai(["I could not."])
    code, out, err, _ = await run(fake, tmp_path)
    assert (code, out) == (0, "I could not.\n")
    assert err == ONE_LINE  # once, whatever was refused after it
    assert [t["function"]["name"] for t in fake.requests[0].body["tools"]] == ["read", "ls", "grep", "bash", "edit",
                                                                              "write", "task"]
    results = [m["content"] for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
    assert results[0] == NO_CONFIRM and "--yes" in results[1]  # what the model is told, as before
    assert (tmp_path / "notes.txt").read_text() == "old\n"


async def test_with_yes_nothing_is_refused_and_nothing_said(fake, tmp_path) -> None:
    fake.script_openai(tool_calls=calls(("bash", {"command": "echo hi"})))
    fake.script_openai(["done"])
    code, out, err, _ = await run(fake, tmp_path, yes=True)
    assert (code, out, err) == (0, "done\n", "")
    assert "hi" in next(m["content"] for m in fake.requests[1].body["messages"] if m["role"] == "tool")


async def test_tools_empty_on_the_command_line_sends_none(fake, tmp_path) -> None:
    fake.script_openai(["ok"])
    code, _, err, _ = await run(fake, tmp_path, tools="")
    assert (code, err) == (0, "")
    assert "tools" not in fake.requests[0].body
