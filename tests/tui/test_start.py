"""The start (issue 27): the first frame before the session, and nothing typed meanwhile is lost.

`TreechatApp(start=...)` is how `treechat` starts (app/tui/run.py): the first frame has the
composer (and places for the transcript and the tree); the start function, gated here, makes the
controller and opens the session. Until it has: typing goes into the composer, a message sent is
shown as "sending" and goes out once the session is open, and a key the App acts on waits, with
every key after it, to run in order."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from textual.message import Message

from treechat.chat import Chat
from treechat.chat import events as chat_events
from treechat.config.settings import ConfigError, load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.tui import TreechatApp
from treechat.widgets.chrome.panels import TranscriptSpace, TreeSpace
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import KEY, path_texts, screen_text, wait_for


@asynccontextmanager
async def starting_app(tmp_path: Any, fake: Any, gate: asyncio.Event, *, fresh: bool = True,
                       fail: BaseException | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The App as run_tui makes it, whose start waits for `gate` (the store and the controller
    taking their time); yields (app, pilot) at once."""
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
    catalogs: list[Any] = []

    async def start(report: Any) -> tuple[Chat, Any]:
        await gate.wait()
        if fail is not None:
            raise fail
        settings = load_settings(tmp_path, env=env)
        catalog = await open_catalog("sqlite", tmp_path)
        catalogs.append(catalog)
        storage = await catalog.create(cwd=str(tmp_path))
        chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                    model_ref="openai/fake-model", cwd=str(tmp_path), tools=[])
        return chat, storage

    app = TreechatApp(start=start, fresh=fresh)
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.pause()
            yield app, pilot
            chat = getattr(app, "chat", None)
            if chat is not None:
                await chat.close()
    finally:
        for catalog in catalogs:
            await catalog.close()


async def test_the_first_frame_has_the_composer_before_the_session_opens(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        assert not app.started and not hasattr(app, "chat")
        assert app.focused is app.query_one(Composer)
        assert app.query(TranscriptSpace) and app.query(TreeSpace) and not app.query(Transcript)
        assert "Message… (/help" in screen_text(app) and "Start a conversation" in screen_text(app)
        assert "No model chosen" not in screen_text(app)  # not known yet: not guessed either
        assert "Space" not in screen_text(app)  # the places are empty (a bare Widget draws its name)
        assert "new session" not in screen_text(app) and "no model" not in screen_text(app)  # header, status bar
        await pilot.press(*"typed early")
        assert app.query_one(Composer).text == "typed early"  # typing goes in at once
        gate.set()
        await wait_for(pilot, lambda: app.started, what="the session open")
        assert app.query(Transcript) and app.query(TreeView) and not app.query(TranscriptSpace)
        assert app.query_one(TreeView).id == "tree" and not app.query(TreeSpace)  # ids: one #tree at a time
        assert app.query_one(Composer).text == "typed early"
        assert "openai/fake-model" in screen_text(app)  # the welcome's model line, once known
        assert "new session" in screen_text(app) and "ctx" in screen_text(app)


async def test_a_message_sent_before_the_session_opens_is_shown_then_goes_out(tmp_path, fake):
    fake.script_openai(["answer ", "to the early one"])
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await pilot.press(*"early words", "enter")
        tray = app.query_one(QueueTray)
        assert tray.items == [("send", "early words")] and tray.display
        assert "sending" in screen_text(app) and "early words" in screen_text(app)
        assert app.query_one(Composer).text == ""  # taken: what is typed next is a new message
        await pilot.press(*"next")
        gate.set()
        await wait_for(pilot, lambda: "to the early one" in screen_text(app), what="the answer")
        assert await path_texts(app) == [("user", "early words"), ("assistant", "answer to the early one")]
        assert tray.items == [] and app.query_one(Composer).text == "next"


async def test_keys_the_app_acts_on_wait_and_run_in_order_once_open(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await pilot.press("ctrl+l", *"fake")  # the model picker, then a filter typed into it
        assert app.query_one(Composer).text == ""  # what followed the held key waits with it
        assert len(app.screen_stack) == 1
        gate.set()
        await wait_for(pilot, lambda: len(app.screen_stack) == 2, what="the model picker")
        picker = app.screen
        await wait_for(pilot, lambda: "fake" in str(getattr(picker.focused, "value", "")), what="the filter typed")
        assert app.query_one(Composer).text == ""


async def test_a_slash_command_before_the_session_opens_runs_once_it_is(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await pilot.press(*"/name early name", "enter")
        assert app.query_one(QueueTray).items == [("send", "/name early name")]
        gate.set()
        await wait_for(pilot, lambda: app.started and "early name" in screen_text(app).splitlines()[0],
                       what="the session named")
        assert app.query_one(QueueTray).items == []


async def test_a_command_from_the_palette_before_the_session_opens_waits_too(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await app.run_command("tree", "")  # what choosing "/tree" in the palette does
        assert app.query_one(QueueTray).items == [("send", "/tree")]
        gate.set()
        await wait_for(pilot, lambda: app.started and app.focused is app.query_one(TreeView), what="the tree focused")
        assert app.query_one(QueueTray).items == []


async def test_ctrl_q_before_the_session_opens_quits_at_once_unless_something_was_typed(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await pilot.press("x", "ctrl+q")  # typed: the quit waits, so that "x" is kept as the draft
        assert app.is_running and app.query_one(Composer).text == "x"
        gate.set()
        await wait_for(pilot, lambda: not app.is_running, what="the quit, once the session is open")
        assert [p.read_text() for p in app.chat.drafts.folder.glob("*.txt")] == ["x"]  # the session's draft
    gate = asyncio.Event()  # the store never opens
    async with starting_app(tmp_path, fake, gate) as (app, pilot):
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, what="the quit")
        assert not hasattr(app, "chat")


async def test_a_start_that_fails_ends_the_app_with_its_error(tmp_path, fake):
    gate = asyncio.Event()
    gate.set()
    problem = ConfigError("config.toml, line 1: unknown key 'modle' (did you mean 'model'?).")
    async with starting_app(tmp_path, fake, gate, fail=problem) as (app, pilot):
        await wait_for(pilot, lambda: app.start_error is not None, what="the start to fail")
        assert app.start_error is problem and app.return_code == 1


def test_the_messages_the_app_names_are_its_widgets_own():
    """The App's @on handlers name the tree's, the transcript's, the question panel's and the
    sessions list's messages from light modules (those widgets load after the first frame): each
    is the widget's own class (TreeView.NodeChosen), handled by the widget's name for it."""
    from treechat.widgets import screen_messages
    from treechat.widgets.question import messages as question_messages
    from treechat.widgets.question.panel import QuestionPanel
    from treechat.widgets.screens import SessionsScreen
    from treechat.widgets.transcript import messages as transcript_messages
    from treechat.widgets.tree import messages as tree_messages

    checked = 0
    for module, owner, prefix in ((tree_messages, TreeView, "on_tree_view_"), (transcript_messages, Transcript, "on_transcript_"),
                                  (question_messages, QuestionPanel, "on_question_panel_"),
                                  (screen_messages, SessionsScreen, "on_sessions_screen_")):
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, Message) and value.__module__ == module.__name__:
                assert getattr(owner, name) is value, (owner, name)
                assert value.handler_name.startswith(prefix) or "Entry" in name, value.handler_name
                checked += 1
    assert checked >= 15


def test_every_controller_event_is_a_frozen_snapshot():
    """One generic message carries them all (the App's `match` is checked exhaustive by mypy);
    what it carries cannot change after it was told."""
    events = typing.get_args(chat_events.ChatEvent)
    assert chat_events.ChatDelta in events and chat_events.ReplyStreaming in events
    assert all(dataclasses.is_dataclass(e) and e.__dataclass_params__.frozen for e in events)  # type: ignore[union-attr]


async def test_a_resumed_session_keeps_the_welcome_hidden_until_it_knows(tmp_path, fake):
    gate = asyncio.Event()
    async with starting_app(tmp_path, fake, gate, fresh=False) as (app, pilot):
        assert "Start a conversation" not in screen_text(app)  # (-c or --session: likely not empty)
        assert "Space" not in screen_text(app)
        gate.set()
        await wait_for(pilot, lambda: app.started, what="the session open")
        await wait_for(pilot, lambda: "Start a conversation" in screen_text(app), what="the welcome of an empty one")
