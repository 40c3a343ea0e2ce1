"""Consent cannot be given by typing (issue 36): for every kind of question the agent asks — a shell
command, a file change, a read outside the working folder, an MCP call, a project's `.mcp.json`, a
restore — natural sentences typed by someone who was typing as it appeared, at rhythms from 0.45 s
to 2 s (and 30 s) between words, never answer it; every word is kept in the composer; and the same
question still takes an idle `y` at once.

The keys are stamped with the times they were typed (the gate decides by their order, and by the
stamps only for a question's first moment on screen), so the rhythms are exact on any machine."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual import events

from tests.mcp.helpers import FAKE
from tests.tui.conftest import fake, idle, make_app, type_text, wait_for  # noqa: F401  (fixtures)
from tests.tui.questions import answer, typed, wait_asking
from treechat.storage.model import MessageEntry, UserMessage

SENTENCES = ["wait I have a question about yaml", "yes lets refactor it", "a quick thought", "go ahead",
             "y not", "no wait actually yes"]
RHYTHMS = (0.45, 0.6, 1.0, 2.0, 30.0)


def call(call_id: str, name: str, **args: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


@dataclass
class Kind:
    """One kind of question: how to bring it up, the words it shows, and whether it was said yes to."""

    name: str
    tools: list[str]
    prepare: Callable[[Path, Any], None]
    ask: Callable[[Any, Any], Awaitable[None]]  # (app, pilot) → the question is coming
    words: str
    said_yes: Callable[[Path, Any, Any], bool]  # (home, fake, app)


async def prompt(app: Any, pilot: Any) -> None:
    await type_text(pilot, "go")
    await pilot.press("enter")


def ran(marker: str) -> Callable[[Path, Any, Any], bool]:
    return lambda home, provider, app: any(marker in json.dumps(r.body["messages"][-1]) for r in provider.requests[1:])


def bash(home: Path, provider: Any) -> None:
    provider.script_openai(tool_calls=[call("c1", "bash", command="echo RAN-$((40+2))")])
    provider.script_openai(["done"])


def write(home: Path, provider: Any) -> None:
    provider.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="WRITTEN\n")])
    provider.script_openai(["done"])


def read_outside(home: Path, provider: Any) -> None:
    secret = home.parent / f"{home.name}-secret.txt"
    secret.write_text("THE-SECRET\n")
    provider.script_openai(tool_calls=[call("c1", "read", path=str(secret))])
    provider.script_openai(["done"])


def mcp_call(home: Path, provider: Any) -> None:
    (home / "config.toml").write_text(f'[mcp_servers.proj]\ncommand = "{sys.executable}"\nargs = ["{FAKE}"]\n')
    provider.script_openai(tool_calls=[call("c1", "proj__echo", text="ECHOED")])
    provider.script_openai(["done"])


async def mcp_prompt(app: Any, pilot: Any) -> None:
    await wait_for(pilot, lambda: any(t.name == "proj__echo" for t in app.chat.mcp.tools()), what="the server",
                   rounds=3000)
    await prompt(app, pilot)


def project(home: Path, provider: Any) -> None:
    (home / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [FAKE]}}}))


async def at_start(app: Any, pilot: Any) -> None:
    return None  # asked after the first frame, unasked for


def restore(home: Path, provider: Any) -> None:
    write(home, provider)


async def restore_prompt(app: Any, pilot: Any) -> None:
    await prompt(app, pilot)
    await wait_asking(pilot, app, "Create notes.txt")
    await answer(pilot, app, "y")
    await wait_for(pilot, lambda: idle(app) and (Path(app.chat.cwd) / "notes.txt").exists(), what="the write")
    first = next(e for e in await app.chat.session.get_branch()
                 if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage))
    app.composer.load_text("")
    await app.moves.choose(first.parent_id)  # before the prompt: notes.txt did not exist there


KINDS = [
    Kind("bash", ["bash"], bash, prompt, "Run this shell command?", ran("RAN-42")),
    Kind("write", ["write"], write, prompt, "Create notes.txt",
         lambda home, provider, app: (home / "notes.txt").exists()),
    Kind("read outside", ["read"], read_outside, prompt, "read outside the working folder", ran("THE-SECRET")),
    Kind("mcp call", [], mcp_call, mcp_prompt, "Let the model call proj__echo?", ran("ECHOED")),
    Kind("project trust", [], project, at_start, "Start this project's MCP servers?",
         lambda home, provider, app: any(s.name == "proj" for s in app.chat.mcp.specs)
         or app.chat.project_mcp()[1] == "trusted"),
    Kind("restore", ["write"], restore, restore_prompt, "Restore 1 file to this point?",
         lambda home, provider, app: not (home / "notes.txt").exists()),
]


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_sentences_typed_into_a_question_never_answer_it(kind, make_app, fake, tmp_path):  # noqa: F811
    kind.prepare(tmp_path, fake)
    async with make_app(tools=kind.tools) as (app, pilot):
        await kind.ask(app, pilot)
        panel = await wait_asking(pilot, app, kind.words, rounds=2000)
        # a key typed as it appeared: this person was typing
        first = events.Key("i", "i")
        first.time = panel.gate.armed_from - panel.gate.arm_delay / 2
        app.post_message(first)
        at = panel.gate.armed_from
        expected = "i"
        for sentence in SENTENCES:
            for between in RHYTHMS:
                words = f" {sentence}"
                keys = typed(words, at, between_words=between)
                for key in keys:
                    app.post_message(key)
                at = keys[-1].time
                expected += words
                await pilot.pause()
        await pilot.pause()
        assert not panel.answered and app.questions.panel is panel, "typing answered the question"
        assert not kind.said_yes(tmp_path, fake, app)
        assert app.composer.text == expected  # every key typed is kept
        # the deliberate act: Esc moves to the question, then one key answers
        await pilot.press("escape")
        await answer(pilot, app, "n")
        await wait_for(pilot, lambda: app.questions.panel is not panel, what="the refusal")
        assert not kind.said_yes(tmp_path, fake, app)


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_an_idle_y_answers_at_once(kind, make_app, fake, tmp_path):  # noqa: F811
    kind.prepare(tmp_path, fake)
    async with make_app(tools=kind.tools) as (app, pilot):
        await kind.ask(app, pilot)
        panel = await wait_asking(pilot, app, kind.words, rounds=2000)
        assert panel.gate.state == "ready"
        await answer(pilot, app, "y")
        await wait_for(pilot, lambda: kind.said_yes(tmp_path, fake, app), what="the yes taking effect", rounds=3000)
