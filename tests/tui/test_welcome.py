"""The first screen: an empty session shows how to start (keys from the keymap) and which model
answers or why none does; the first message replaces it. Snapshots at 80×24 and 160×45."""

from __future__ import annotations

import dataclasses

from treechat.chat import Chat
from treechat.config.settings import load_settings
from treechat.llm.detect import DetectedServer
from treechat.llm.registry import ModelRegistry
from treechat.storage.memory import MemoryCatalog
from treechat.tui import TreechatApp
from treechat.widgets import keymap
from treechat.widgets.chrome.welcome import Welcome
from treechat.widgets.keymap import display_key
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import idle, type_text, wait_for


def welcome_text(app) -> str:
    return app.query_one(Welcome).render().plain


def key(action: str, context: str = "global") -> str:
    found = next(k for k in keymap.KEYMAP if k.action == action and k.context == context)
    return display_key(found.key.split(",")[0])


async def test_an_empty_session_says_how_to_start_and_which_model(make_app):
    async with make_app(size=(160, 45)) as (app, pilot):
        welcome = app.query_one(Welcome)
        assert welcome.display and not app.query_one(Transcript).display
        text = welcome_text(app)
        for action in ("toggle_tree", "search", "sessions", "command_palette", "help", "model"):
            assert key(action) in text
        for action in ("submit", "follow_up", "tab_follow_up"):
            assert key(action, "composer") in text
        assert "Model: openai/fake-model" in text
        assert app.query_one(TreeView).display  # wide: the tree keeps its place


async def test_the_key_names_come_from_the_keymap(make_app, monkeypatch):
    changed = tuple(dataclasses.replace(k, key="ctrl+y") if k.action == "toggle_tree" else k for k in keymap.KEYMAP)
    monkeypatch.setattr("treechat.widgets.chrome.welcome.KEYMAP", changed)
    async with make_app() as (app, pilot):
        text = welcome_text(app)
        assert "Ctrl+Y" in text and "Ctrl+B" not in text


async def test_without_a_key_the_welcome_says_what_to_do_and_the_banner_waits(make_app):
    async with make_app(key=None, remote=True) as (app, pilot):
        text = welcome_text(app)
        assert "OPENAI_API_KEY" in text and not app.query_one("#banner").display
        app.chat.add_local_servers([DetectedServer("ollama", "http://127.0.0.1:9/v1", ("qwen3:8b",))])
        await wait_for(pilot, lambda: "Found on this machine: ollama" in welcome_text(app), what="the server named")


async def test_the_first_message_replaces_it(make_app, fake):
    fake.script_openai(["hello there"])
    async with make_app(size=(80, 24)) as (app, pilot):
        assert app.query_one(Welcome).display
        assert not app.query_one(TreeView).display  # narrow: the tree is a closed drawer
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.query_one(Welcome).display, what="the welcome to go")
        assert app.query_one(Transcript).display
        await wait_for(pilot, lambda: idle(app), what="the reply")


async def test_a_session_with_messages_has_no_welcome_and_the_root_shows_it_again(make_app, fake):
    fake.script_openai(["first answer"])
    async with make_app(size=(160, 45)) as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        session_id = app.chat.session_id
    async with make_app(session_id=session_id, size=(160, 45)) as (app, pilot):
        assert not app.query_one(Welcome).display and app.query_one(Transcript).display
        await app.chat.move_to(None)  # the leaf before the first message: a new start on this tree
        await wait_for(pilot, lambda: app.query_one(Welcome).display, what="the welcome at the root")
        assert app.query_one(TreeView).display  # the tree has branches to show: it stays


# ---------------------------------------------------------------- snapshots


class FirstRun(TreechatApp):
    """The real App on a fresh in-memory store with a fixed session id (stable snapshots)."""

    def __init__(self, home, *, key: bool) -> None:
        env = {"OPENAI_API_KEY": "sk-snapshot"} if key else {}
        settings = load_settings(home, env=env)
        chat = Chat(catalog=MemoryCatalog(), settings=settings, registry=ModelRegistry(settings, env=env),
                    model_ref="openai/gpt-4.1-mini" if key else None, cwd=str(home))  # config.toml's tools: all six
        super().__init__(chat, None, detect_servers=False)

    async def on_mount(self) -> None:
        self.first_storage = await self.chat.catalog.create(session_id="019a0000-0000-7000-8000-000000000001", cwd="/w")
        await super().on_mount()
        self.composer.cursor_blink = False


def test_welcome_80x24_without_a_model(snap_compare, tmp_path):
    assert snap_compare(FirstRun(tmp_path, key=False), terminal_size=(80, 24))


def test_welcome_160x45_with_a_model(snap_compare, tmp_path):
    assert snap_compare(FirstRun(tmp_path, key=True), terminal_size=(160, 45))
