"""Keys in arrival order, through the terminal parser and the driver's path into the App
(issue 10): bursts of text + Enter are never merged, lost or reordered; Alt+Enter as terminals
send it (ESC CR) queues a follow-up; a printable key nobody takes goes to the composer."""

from __future__ import annotations

import asyncio

from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.textual_internals import parse_terminal_input, send_from_terminal
from treechat.widgets.transcript.view import Transcript

from .conftest import idle, path_texts, wait_for


def feed(app, data: str) -> None:
    """Bytes as a terminal sends them: parsed like the driver does, posted like its input thread."""
    for event in parse_terminal_input(data):  # (a trailing lone ESC flushed)
        send_from_terminal(app, event)


async def test_a_burst_of_messages_arrives_whole_and_in_order(make_app, fake):
    for i in range(4):
        fake.script_openai([f"answer {i}"])
    async with make_app() as (app, pilot):
        app.ui(Composer).focus()
        feed(app, "first message\rsecond one\rthird\rfourth and last\r")
        # the first starts a run; the rest arrive while it runs and are steers, delivered in order
        # (one that lands before the first request goes out shares it: the model sees both)
        await wait_for(pilot, lambda: idle(app) and not app.chat.is_busy and fake.requests
                       and "fourth and last" in str(fake.requests[-1].body["messages"]), what="the last message sent",
                       rounds=800)
        await wait_for(pilot, lambda: idle(app), what="the last reply")
        texts = await path_texts(app)
        assert [t for role, t in texts if role == "user"] == ["first message", "second one", "third", "fourth and last"]
        assert texts[-1][0] == "assistant"
        assert app.ui(Composer).text == ""


async def test_a_burst_while_a_reply_streams_becomes_steers_in_order(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["slow"], gate=gate, gate_after=0)
    async with make_app() as (app, pilot):
        app.ui(Composer).focus()
        feed(app, "go\r")
        await wait_for(pilot, lambda: app.chat.is_running and len(fake.requests) == 1, what="streaming")
        feed(app, "one\rtwo\rthree\r")
        await wait_for(pilot, lambda: len(app.ui(QueueTray).items) == 3, what="three queued")
        assert app.ui(QueueTray).items == [("steer", "one"), ("steer", "two"), ("steer", "three")]
        gate.set()
        await app.chat.stop()


async def test_alt_enter_as_esc_cr_queues_a_follow_up_and_tab_still_does(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["slow"], gate=gate, gate_after=0)
    async with make_app() as (app, pilot):
        app.ui(Composer).focus()
        feed(app, "go\r")
        await wait_for(pilot, lambda: app.chat.is_running, what="streaming")
        feed(app, "later please\x1b\r")  # what tmux, xterm and GNOME Terminal send for Alt+Enter
        feed(app, "and this\t")
        feed(app, "now\x1b[13;3u")  # the kitty keyboard protocol's Alt+Enter
        await wait_for(pilot, lambda: len(app.ui(QueueTray).items) == 3, what="three follow-ups")
        assert app.ui(QueueTray).items == [("follow_up", "later please"), ("follow_up", "and this"),
                                           ("follow_up", "now")]
        gate.set()
        await app.chat.stop()


async def test_typing_after_a_click_in_the_transcript_goes_to_the_composer(make_app, fake):
    async with make_app() as (app, pilot):
        app.ui(Transcript).focus()
        await pilot.pause()
        feed(app, "hello")
        await wait_for(pilot, lambda: app.ui(Composer).text == "hello", what="the text in the composer")
        assert app.ui(Composer).has_focus


async def test_a_burst_typed_into_the_transcript_or_the_tree_all_goes_to_the_composer(make_app, fake, monkeypatch):
    """The first printable key nobody takes moves the focus to the composer; the keys behind it in
    the same burst must follow it there, not run the transcript's or the tree's bindings (y copies,
    e edits and resends, space previews, g jumps) or lose the Enter."""
    from treechat.session.session import Session
    from treechat.storage.model import AssistantMessage, TextContent, UserMessage
    from treechat.widgets.tree.view import TreeView

    fake.script_openai(["the answer"])
    async with make_app() as (app, pilot):
        s = await Session.open(await app.chat.catalog.create())
        await s.append_message(UserMessage(content="an old prompt"))
        await s.append_message(AssistantMessage(content=[TextContent(text="an old reply")], provider="openai",
                                                model="fake-model"))
        await app.chat.open(await app.chat.catalog.open(s.storage.session_id))
        transcript = app.ui(Transcript)
        await wait_for(pilot, lambda: len(transcript.items) == 2, what="the session shown")
        transcript.focus()
        await wait_for(pilot, lambda: transcript.has_focus, what="the transcript focused")
        transcript.action_select(-1)  # the reply selected: y would copy it, e (on a prompt) edit it
        await wait_for(pilot, lambda: transcript.selected is not None, what="a selected message")
        feed(app, "wxyz abed")
        await wait_for(pilot, lambda: app.ui(Composer).text == "wxyz abed", what="the burst in the composer")
        app.ui(Composer).clear()
        app.ui(TreeView).focus()
        await wait_for(pilot, lambda: app.ui(TreeView).has_focus, what="the tree focused")
        # A busy tree (a 100k-entry redraw) handles its keys late: by then the App has handed it
        # the whole burst. Decided where a key bubbles back, "ign here" was lost and "g" jumped.
        slow_original = TreeView.on_key

        async def slow_on_key(self, event):
            await asyncio.sleep(0.05)
            await slow_original(self, event)

        monkeypatch.setattr(TreeView, "on_key", slow_on_key)
        feed(app, "sign here\r")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the burst sent")
        assert [t for r, t in await path_texts(app) if r == "user"] == ["an old prompt", "sign here"]


async def test_alt_enter_right_after_enter_queues_a_follow_up_not_a_steer(make_app, fake):
    """From idle, one burst: "first" Enter starts a run; the Alt+Enter behind it must queue a
    follow-up, answered after the first reply (a steer would join the first request), while the
    later Enter steers (delivered before the follow-up: with the first request if it was queued
    before that went out, else right after the first reply)."""
    gate = asyncio.Event()
    fake.script_openai(["reply 1"], gate=gate, gate_after=0)
    fake.script_openai(["reply 2"])
    fake.script_openai(["reply 3"])
    async with make_app() as (app, pilot):
        app.ui(Composer).focus()
        feed(app, "first\rq1 followup\x1b\rs1 steer\r")
        await wait_for(pilot, lambda: len(fake.requests) == 1, what="the first request")
        await wait_for(pilot, lambda: ("follow_up", "q1 followup") in app.ui(QueueTray).items, what="the follow-up queued")
        gate.set()
        await wait_for(pilot, lambda: idle(app) and not app.chat.is_busy and fake.requests
                       and "q1 followup" in str(fake.requests[-1].body["messages"]), what="the follow-up answered",
                       rounds=800)
        await wait_for(pilot, lambda: idle(app), what="its reply")
        texts = [t for _, t in await path_texts(app)]
        assert texts.index("s1 steer") < texts.index("q1 followup") and texts.index("reply 1") < texts.index("q1 followup")
        assert texts[:2] == ["first", "s1 steer"] or texts[:3] == ["first", "reply 1", "s1 steer"], texts


async def test_the_tree_filter_takes_what_is_typed_after_slash(make_app, fake):
    """Typing after `/` in the tree is the filter's: the composer redirect must leave it alone
    (a final smoke test found every letter the tree does not bind going to the composer)."""
    from treechat.session.session import Session
    from treechat.storage.model import UserMessage
    from treechat.widgets.tree.view import TreeView

    async with make_app() as (app, pilot):
        s = await Session.open(await app.chat.catalog.create())
        for text in ("first question", "second question"):
            await s.append_message(UserMessage(content=text))
        await app.chat.open(await app.chat.catalog.open(s.storage.session_id))
        tree = app.ui(TreeView)
        tree.focus()
        await wait_for(pilot, lambda: tree.has_focus, what="the tree focused")
        feed(app, "/")  # opens the filter (a binding: it runs when the key comes back to the App)
        await wait_for(pilot, lambda: tree._query_typing.active, what="the filter open")
        feed(app, "second")
        await wait_for(pilot, lambda: tree._query_typing.text == "second", what="the filter text")
        assert app.ui(Composer).text == "" and tree.has_focus
        feed(app, "\x1b")  # Esc clears the filter; typing after it goes to the composer again
        await wait_for(pilot, lambda: not tree._query_typing.active, what="the filter closed")
        feed(app, "hello")
        await wait_for(pilot, lambda: app.ui(Composer).text == "hello", what="typing in the composer")
