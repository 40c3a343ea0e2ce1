"""Sending, streaming, steering, follow-ups and stopping, through the real App (issue 5 §4, §9)."""

from __future__ import annotations

import asyncio

from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.textual_internals import notifications
from treechat.widgets.tree.view import TreeView

from ..narrow import assistant_of
from .conftest import idle, path_texts, screen_text, type_text, wait_for


async def test_send_streams_the_reply_and_persists_both(make_app, fake):
    fake.script_openai(["Hello ", "there, ", "human."])
    async with make_app() as (app, pilot):
        await type_text(pilot, "hi model")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the reply")
        await pilot.pause()
        assert await path_texts(app) == [("user", "hi model"), ("assistant", "Hello there, human.")]
        assert app.query_one(Composer).text == ""
        tree = app.query_one(TreeView)
        for entry in await app.chat.session.get_branch():
            if entry.type == "message":
                assert tree.layout_data.index_of(entry.id) is not None
        assert "human." in screen_text(app)
        assert "hi model" in screen_text(app).splitlines()[0]  # an unnamed session is titled by its first prompt
    assert fake.requests[0].headers["authorization"] == "Bearer sk-test-tui-secret"


async def test_steer_and_follow_up_while_streaming_are_answered_in_order(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["first ", "answer"], gate=gate)
    fake.script_openai(["answer to the steer"])
    fake.script_openai(["answer to the follow-up"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "start")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and app.query_one(Composer).running, what="streaming")
        await type_text(pilot, "steer this way")
        await pilot.press("enter")
        await type_text(pilot, "and then this")
        await pilot.press("alt+enter")
        await wait_for(pilot, lambda: app.query_one(QueueTray).display, what="the queue tray")
        tray = app.query_one(QueueTray)
        assert [k for k, _ in tray.items] == ["steer", "follow_up"]
        assert app.query_one(Composer).text == ""
        gate.set()
        await wait_for(pilot, lambda: len(fake.requests) == 3 and idle(app), what="all three replies")
        await pilot.pause()
        assert await path_texts(app) == [
            ("user", "start"), ("assistant", "first answer"),
            ("user", "steer this way"), ("assistant", "answer to the steer"),
            ("user", "and then this"), ("assistant", "answer to the follow-up"),
        ]
        assert not tray.display


async def test_escape_stops_the_run_and_keeps_the_partial_reply(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["partial ", "never sent"], gate=gate)
    async with make_app() as (app, pilot):
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and app.query_one(Composer).running, what="streaming")
        await pilot.pause(0.05)
        await pilot.press("escape")
        await wait_for(pilot, lambda: idle(app), what="the stop")
        branch = await app.chat.session.get_branch()
        last = branch[-1].message
        assert last.role == "assistant" and last.stop_reason == "aborted"
        gate.set()


async def test_escape_sends_queued_steering_next(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["slow"], gate=gate, gate_after=0)
    fake.script_openai(["steered reply"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and app.query_one(Composer).running, what="streaming")
        await type_text(pilot, "actually do this")
        await pilot.press("enter")
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the steer to go out")
        texts = await path_texts(app)
        assert texts[-2:] == [("user", "actually do this"), ("assistant", "steered reply")]
        gate.set()


async def test_alt_up_pulls_the_last_queued_message_back(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["slow"], gate=gate, gate_after=0)
    async with make_app() as (app, pilot):
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_one(Composer).running, what="streaming")
        await type_text(pilot, "later please")
        await pilot.press("alt+enter")
        await wait_for(pilot, lambda: app.query_one(QueueTray).display, what="queued")
        await pilot.press("alt+up")
        await wait_for(pilot, lambda: app.query_one(Composer).text == "later please", what="pulled back")
        assert app.chat.queue.follow_up == ()
        gate.set()
        await wait_for(pilot, lambda: idle(app), what="the end of the run")


async def test_without_a_key_the_text_stays_and_the_error_is_inline(make_app, fake):
    async with make_app(key=None, remote=True) as (app, pilot):
        banner = app.query_one("#banner")
        # an empty session: the welcome says what is missing (the banner would only repeat it)
        welcome = app.query_one("Welcome")
        assert welcome.display and "OPENAI_API_KEY" in str(welcome.render()) and not banner.display
        await type_text(pilot, "will not go out")
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(Composer).text == "will not go out"
        assert "OPENAI_API_KEY" in str(banner.render())
        assert fake.requests == []


async def test_escape_sequences_from_the_model_never_reach_the_terminal(make_app, fake):
    fake.script_openai(["safe \x1b[2J\x1b]52;c;ZXZpbA==\x07text"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "say something nasty")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "safe" in text and "text" in text
        assert "\x1b" not in text and "ZXZpbA" not in text


async def test_quitting_keeps_what_was_typed_and_queued_as_the_sessions_draft(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["slow"], gate=gate, gate_after=0)
    async with make_app() as (app, pilot):
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.ui(Composer).running, what="streaming")
        await type_text(pilot, "queued for later")
        await pilot.press("alt+enter")
        await type_text(pilot, "half-written thought")
        sid = app.chat.session_id
        await pilot.press("ctrl+q")
        from treechat.widgets.screens import ConfirmDialog

        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the quit confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, what="the exit")
        gate.set()
        from treechat.session.session import Session

        branch = await (await Session.open(await app.chat.catalog.open(sid))).get_branch()
        assert assistant_of(branch[-1]).stop_reason == "aborted"  # the partial reply is saved
    async with make_app(session_id=sid) as (app, pilot):
        text = app.ui(Composer).text
        assert "queued for later" in text and "half-written thought" in text


async def test_a_reply_that_cannot_be_saved_stays_on_screen_and_says_where_it_is(make_app, fake):
    import errno

    fake.script_openai(["an answer ", "worth keeping"])
    async with make_app() as (app, pilot):
        await app.chat.ensure_agent()
        storage = app.chat.session.storage
        real_append = storage.append_entry

        async def full_disk(entry, *, move_leaf=True):
            if entry.type == "message" and entry.message.role == "assistant":
                raise OSError(errno.ENOSPC, "No space left on device")
            return await real_append(entry, move_leaf=move_leaf)

        storage.append_entry = full_disk
        await type_text(pilot, "question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "could not be saved" in str(app.query_one("#banner").render()),
                       what="the banner")
        await pilot.pause(0.2)
        assert "worth keeping" in screen_text(app)
        assert "recovery" in str(app.query_one("#banner").render())


async def test_an_error_banner_clears_once_a_later_run_succeeds(make_app, fake):
    fake.script_openai(["fine now"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "/fork sideways")  # a mistake: one sentence in the banner
        await pilot.press("enter")
        await pilot.pause()
        banner = app.query_one("#banner")
        assert banner.display and "Use /fork here" in str(banner.render())
        app.ui(Composer).load_text("")
        await type_text(pilot, "a real question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause()
        assert not banner.display


async def test_a_session_file_with_parent_cycles_opens_with_a_warning(make_app, tmp_path):
    """It used to stop the app at start with a traceback (an entry was its own ancestor)."""
    from tests.cli.test_cli_hostile_sessions import SID, hostile_file

    hostile_file(tmp_path)
    async with make_app(storage_kind="jsonl", session_id=SID) as (app, pilot):
        await wait_for(pilot, lambda: any("parent cycles broken" in n.message for n in notifications(app)),
                       what="the warning")
        assert app.chat.session.leaf_id == "s"
        assert "its own parent" in screen_text(app)
