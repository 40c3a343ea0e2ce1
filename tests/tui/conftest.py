"""Drive the real TreechatApp with Textual's pilot against the loopback fake provider."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.tui import TreechatApp
from treechat.widgets import textual_internals

KEY = "sk-test-tui-secret"


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
def make_app(tmp_path, fake) -> Callable[..., Any]:
    """`async with make_app() as (app, pilot)`: a fresh SQLite home with a key for the fake server;
    no tools unless `tools` names some, or `config_tools` takes config.toml's (all six by default)."""

    @asynccontextmanager
    async def factory(*, key: str | None = KEY, model: str | None = "openai/fake-model", session_id: str | None = None,
                      size: tuple[int, int] = (140, 44), storage_kind: str = "sqlite",
                      tools: list[str] | None = None, app_class: type[TreechatApp] = TreechatApp,
                      message_hook: Callable[[Any], None] | None = None,
                      config_tools: bool = False, remote: bool = False) -> AsyncIterator[tuple[Any, Any]]:
        # remote: OpenAI itself (no OPENAI_BASE_URL: its key needed, its catalog listed), never sent to
        env = {} if remote else {"OPENAI_BASE_URL": fake.base_url}
        if key:
            env["OPENAI_API_KEY"] = key
        settings = load_settings(tmp_path, env=env)
        catalog = await open_catalog(storage_kind, tmp_path)
        storage = await (catalog.open(session_id) if session_id else catalog.create(cwd=str(tmp_path)))
        chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=model,
                    cwd=str(tmp_path), tools=None if config_tools else tools or [])  # config_tools: config.toml's
        app = app_class(chat, storage, detect_servers=False)
        try:
            async with app.run_test(size=size, message_hook=message_hook) as pilot:
                await pilot.pause()
                yield app, pilot
        finally:
            await chat.close()  # as run_tui does: a run still going is stopped before the store closes
            await catalog.close()

    return factory


async def wait_for(pilot: Any, predicate: Callable[[], bool], *, what: str, rounds: int = 400) -> None:
    """Let the app run until `predicate` holds (bounded; fails with `what`, never hangs)."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def type_text(pilot: Any, text: str) -> None:
    composer = pilot.app.query_one("Composer")
    composer.focus()
    composer.insert(text)
    await pilot.pause()


async def path_texts(app: Any) -> list[tuple[str, str]]:
    """(role, text) of every message on the active path, from storage."""
    from treechat.storage.model import message_text

    branch = await app.chat.session.get_branch()
    return [(e.message.role, message_text(e.message)) for e in branch if e.type == "message"]


def screen_text(app: Any) -> str:
    """What the terminal shows right now, as plain text (every cell of the screen)."""
    return textual_internals.screen_text(app.screen)


def idle(app: Any) -> bool:
    return app.chat.agent is not None and not app.chat.is_running and not app.query_one("Composer").running


__all__ = ["wait_for", "type_text", "path_texts", "idle", "asyncio"]
