"""The app with OPENAI_BASE_URL at an OpenAI-compatible server (issue 37): with no model chosen
it uses the server's first model, and the picker (Ctrl+L) lists what the server serves, under
its URL, not OpenAI's catalog."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.fake_local_server import LocalServer
from treechat.chat import Chat
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.tui import TreechatApp
from treechat.widgets.chrome.welcome import Welcome

from .conftest import screen_text, type_text, wait_for
from .test_model_choice import open_picker, options


@asynccontextmanager
async def url_app(tmp_path: Any, env: dict[str, str], size: tuple[int, int] = (100, 30)) -> AsyncIterator[tuple[Any, Any]]:
    settings = load_settings(tmp_path, env=env)
    catalog = await open_catalog("sqlite", tmp_path)
    # no model chosen; the usual ports are not asked (hermetic), the server named by its URL is
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=None,
                cwd=str(tmp_path), tools=[], local_servers=())
    app = TreechatApp(chat, await catalog.create(cwd=str(tmp_path)), detect_servers=True)
    try:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            yield app, pilot
    finally:
        await chat.close()
        await catalog.close()


async def test_the_picker_lists_the_servers_models_and_the_first_one_answers(fake, tmp_path):
    LocalServer.vllm(fake, reply="served by the URL")
    async with url_app(tmp_path, {"OPENAI_BASE_URL": f"{fake.base_url}/v1"}) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.status().model == "openai/Qwen/Qwen3-8B", what="the server's model")
        await wait_for(pilot, lambda: "Model: openai/Qwen/Qwen3-8B" in str(app.query_one(Welcome).render()),
                       what="the welcome naming it")
        await open_picker(app, pilot)
        rows = options(app)
        headers = [text for text, _ in rows if not text.startswith("  ")]
        assert headers[0] == f"openai · {fake.base_url}/v1"
        served = [text for text, _ in rows if text.strip().lstrip("● ").startswith("openai/")]
        assert len(served) == 1 and "Qwen/Qwen3-8B" in served[0] and "local" in served[0]
        assert not any("gpt-4.1" in text for text, _ in rows)  # not OpenAI's catalog
        await pilot.press("escape")
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "served by the URL" in screen_text(app), what="the reply")
        assert fake.requests[-1].body["model"] == "Qwen/Qwen3-8B"


async def test_a_silent_server_is_said_in_the_picker_and_a_typed_model_still_goes(tmp_path):
    async with url_app(tmp_path, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) as (app, pilot):
        await wait_for(pilot, lambda: bool(app.chat.local.unanswered), what="the server asked")
        await open_picker(app, pilot)
        rows = options(app)
        assert rows[0] == ("openai · http://127.0.0.1:9/v1 · not answering · type openai/ID", True)  # first
        await pilot.press(*"openai/my-model", "enter")
        await wait_for(pilot, lambda: app.chat.status().model == "openai/my-model", what="the typed model")
