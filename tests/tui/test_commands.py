"""Slash commands, the palette, tool confirmation and compaction through the real App
(issue 5 §7, issue 6 "done means")."""

from __future__ import annotations

import asyncio
import json
from functools import partial

from tests.fixtures import PI_FIXTURES
from treechat.storage.session_file import read_session_file
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import SessionsScreen
from treechat.widgets.textual_internals import notifications
from treechat.widgets.transcript.view import Transcript

from .conftest import idle, path_texts, screen_text, type_text, wait_for
from .questions import answer, wait_asking

FIXTURES = PI_FIXTURES
OVERFLOW = {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                 "resulted in 250000 tokens.", "type": "invalid_request_error",
                      "code": "context_length_exceeded"}}


def is_summary(request) -> bool:
    return "context summarization assistant" in json.dumps(request.body)


def summaries(fake):
    """Answer every summary request (one or two per compaction) with a structured summary."""
    return lambda request: fake.openai_reply(["## Goal\nthe summarised goal"]) if is_summary(request) else None


def app_texts(app) -> list[tuple[str, str]]:
    from treechat.storage.model import message_text

    return [(getattr(m, "role", ""), message_text(m)) for m in app.chat.agent.state.messages]


async def slash(pilot, line: str) -> None:
    await type_text(pilot, line)
    await pilot.press("enter")
    await pilot.pause()


async def test_palette_runs_an_action(make_app):
    async with make_app() as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "sessions":
            await pilot.press(ch)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), what="the sessions screen from the palette")


async def test_the_palette_shows_every_argument_hint_brackets_included(make_app):
    async with make_app() as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "compact":
            await pilot.press(ch)
        await wait_for(pilot, lambda: "/compact [instructions]" in screen_text(app), what="the hint in brackets")


async def test_bash_tool_asks_before_running(make_app, fake):
    fake.script_openai(tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"command": "echo from-the-tool"}'}])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_asking(pilot, app, "echo from-the-tool", what="the confirmation")
        await answer(pilot, app, "y")  # typing cannot answer it: a moment on screen first
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the second turn")
        roles = [r for r, _ in await path_texts(app)]
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        assert "from-the-tool" in (await path_texts(app))[2][1]


async def test_name_label_export_and_fork(make_app, fake, tmp_path):
    fake.script_openai(["an answer"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "a question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        reply = app.chat.session.leaf_id
        await slash(pilot, "/name My project")
        assert await app.chat.session.get_session_name() == "My project"
        await slash(pilot, "/label milestone")  # on the reply, not on the name's entry after it
        assert await app.chat.session.get_label(reply) == "milestone"
        out = tmp_path / "out.jsonl"
        await slash(pilot, f"/export {out}")
        await wait_for(pilot, lambda: any("Exported to" in n.message for n in notifications(app)), what="the export")
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert lines[0]["type"] == "session" and any(e.get("label") == "milestone" for e in lines[1:])
        original = app.chat.session.session_id
        await slash(pilot, "/fork before")
        await wait_for(pilot, lambda: app.chat.session.session_id != original, what="the fork")
        assert app.ui(Composer).text == "a question"
        rows = {r.id: r for r in await app.chat.catalog.list()}
        assert rows[app.chat.session.session_id].parent_session_id == original
        assert await path_texts(app) == []  # before the prompt: nothing yet on the new branch


async def test_compact_command_keeps_everything_and_the_card_shows(make_app, fake, tmp_path):
    fake.responder = summaries(fake)
    # a server on this machine has a small window unless someone says otherwise: this one is large
    (tmp_path / "config.toml").write_text('[providers.openai]\nmodels = {"fake-model" = {context_window = 128000}}\n')
    async with make_app() as (app, pilot):
        s = app.chat.session
        from treechat.storage.model import AssistantMessage, TextContent, UserMessage

        first = None
        for i in range(12):
            uid = await s.append_message(UserMessage(content=f"question {i} " + "words " * 3000))
            first = first or uid
            await s.append_message(AssistantMessage(content=[TextContent(text=f"answer {i} " + "more " * 3000)],
                                                    provider="openai", model="fake-model"))
        await slash(pilot, "/fork sideways")  # a mistake in the banner first: a compaction that works clears it
        assert app.query_one("#banner").display
        await slash(pilot, "/compact keep the goal")
        await wait_for(pilot, lambda: any(r.type == "compaction" for r in app.chat.tree.by_id.values()) and not app.chat.agent.is_compacting,
                       what="the compaction")
        await wait_for(pilot, lambda: not app.query_one("#banner").display, what="the banner cleared")
        await pilot.pause(0.2)
        assert all(is_summary(r) for r in fake.requests)
        assert any("Additional focus: keep the goal" in json.dumps(r.body) for r in fake.requests)
        comp = (await s.storage.find_entries("compaction"))[-1]
        assert comp.trigger == "manual" and comp.tokens_after and comp.tokens_after < comp.tokens_before
        assert len(await s.storage.find_entries("message")) == 24  # nothing deleted
        assert app.ui(Transcript).query("CompactionCard")  # the card stands where the summarised messages were
        # the entry before the compaction still has the full history
        await app.chat.move_to(comp.parent_id)
        await wait_for(pilot, lambda: app.chat.session.leaf_id == comp.parent_id, what="the move")
        ctx = await s.build_session_context()
        assert len(ctx.messages) == 24 and ctx.messages[0].role == "user"


async def test_context_too_long_compacts_retries_once_and_the_reply_arrives(make_app, fake, tmp_path):
    # A window big enough that the threshold never fires: only the server's "too long" triggers it.
    (tmp_path / "config.toml").write_text('[providers.openai]\nmodels = { "fake-model" = { context_window = 10000000 } }\n')
    header, entries, leaf, _ = read_session_file(FIXTURES / "large-session.v3.jsonl")
    async with make_app() as (app, pilot):
        storage, _ = await app.chat.catalog.import_session({**header, "id": "imported-long"}, entries, leaf)
        await app.chat.open(storage)

        fake.responder = summaries(fake)
        fake.script_status(400, OVERFLOW)
        fake.script_openai(["the reply after compaction"])
        await app.chat.set_model("openai/fake-model")
        await type_text(pilot, "and now?")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.agent is not None and idle(app) and not app.chat.agent.is_compacting
                       and any("after compaction" in t for _, t in app_texts(app)), what="overflow, summary and retry",
                       rounds=1500)
        chats = [r for r in fake.requests if not is_summary(r)]
        assert len(chats) == 2  # the request that overflowed and exactly one retry
        assert len(chats[1].body["messages"]) < len(chats[0].body["messages"])  # the retry sent the compacted context
        texts = await path_texts(app)
        assert texts[-1] == ("assistant", "the reply after compaction")
        comps = await app.chat.session.storage.find_entries("compaction")
        assert [c.trigger for c in comps] == ["overflow"]
        after = await app.chat.session.storage.get_entries()
        assert {e.id for e in entries} <= {e.id for e in after}  # every original entry is still there
        await pilot.pause(0.2)
        assert "reply after compaction" in screen_text(app)
        shown = [i.entry_id for i in app.ui(Transcript).items]
        assert len(shown) == len(set(shown))  # nothing shown twice after the compaction
        title = str(app.query_one("SessionHeader").render()).split("▸")[0].strip()
        assert title and "Debugger" not in title  # the session's name or first prompt, not a tool's text
        # choosing the entry before the compaction shows the full history again
        await app.chat.move_to(comps[-1].parent_id)
        ctx = await app.chat.session.build_session_context()
        assert len(ctx.messages) >= 914 and ctx.messages[0].role != "compactionSummary"


async def test_typing_goes_on_while_an_export_is_written(make_app, fake, tmp_path, monkeypatch):
    """A 100k-entry page takes seconds; the App's handler waiting for it used to hold every key."""
    release = asyncio.Event()

    async def slow_export(path=None):
        await release.wait()
        return tmp_path / "slow.html"

    async with make_app() as (app, pilot):
        monkeypatch.setattr(app.chat, "export", slow_export)
        await slash(pilot, "/export slow.html")
        await type_text(pilot, "still typing")
        await pilot.press("!")
        await wait_for(pilot, lambda: app.ui(Composer).text == "still typing!", what="the keys during the export")
        release.set()
        await wait_for(pilot, lambda: any("Exported to" in n.message for n in notifications(app)), what="the notice")


async def test_export_writes_the_format_its_extension_names(make_app, fake, tmp_path):
    fake.script_openai(["an answer worth sharing"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "a question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        for name in ("s.html", "s.md", "s.jsonl"):
            await slash(pilot, f"/export {tmp_path / name}")
            await wait_for(pilot, partial((tmp_path / name).exists), what=f"the {name} export")
        page = (tmp_path / "s.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and "an answer worth sharing" in page
        assert "an answer worth sharing" in (tmp_path / "s.md").read_text(encoding="utf-8")
        header, entries, _, _ = read_session_file(tmp_path / "s.jsonl")
        assert header["id"] == app.chat.session_id and len(entries) >= 2


async def test_an_unknown_command_is_never_sent_and_its_text_stays(make_app, fake):
    async with make_app() as (app, pilot):
        await slash(pilot, "/modle openai/x")
        assert fake.requests == []
        assert app.ui(Composer).text == "/modle openai/x"
        banner = str(app.query_one("#banner").render())
        assert "Unknown command /modle" in banner and "/model" in banner
        app.ui(Composer).load_text("")
        await slash(pilot, "//modle is how you spell it")  # a literal slash goes out as text
        await wait_for(pilot, lambda: len(fake.requests) == 1, what="the literal message")
        assert "/modle is how you spell it" in json.dumps(fake.requests[0].body["messages"][-1])
