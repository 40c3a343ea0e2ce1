"""Choosing a model and a thinking level through the real App: typed refs, refusals, the recent
list in state.json, providers without a key, levels by the model's capability."""

from __future__ import annotations

import json

from textual.widgets import OptionList

from treechat.llm.detect import DetectedServer
from treechat.widgets.screens import ModelPicker, ThinkingPicker

from .conftest import screen_text, type_text, wait_for


def options(app) -> list[tuple[str, bool]]:
    box = app.screen.query_one("#models", OptionList)
    return [(box.get_option_at_index(i).prompt.plain, box.get_option_at_index(i).disabled) for i in range(box.option_count)]


async def open_picker(app, pilot) -> None:
    await pilot.press("ctrl+l")
    await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker), what="the model picker")
    await pilot.pause()


async def test_a_typed_model_is_used_and_remembered_first(make_app, tmp_path):
    async with make_app() as (app, pilot):
        await open_picker(app, pilot)
        rows = options(app)
        assert any("● openai/fake-model" in text for text, _ in rows)  # the current one, not listed by the catalog
        await pilot.press(*"openai/my-finetune-1", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ModelPicker), what="the picker to close")
        assert app.chat.status().model == "openai/my-finetune-1"
        state = json.loads((tmp_path / "state.json").read_text())
        assert state["recent_models"][0] == "openai/my-finetune-1"
        await open_picker(app, pilot)
        rows = options(app)
        assert rows[0] == ("Recent", True)
        assert "● openai/my-finetune-1" in rows[1][0] and rows[1][1] is False
        await pilot.press("escape")


async def test_an_unknown_provider_is_refused_in_the_dialog(make_app):
    async with make_app() as (app, pilot):
        await open_picker(app, pilot)
        await pilot.press(*"nosuch/model-x", "enter")
        await wait_for(pilot, lambda: "Unknown provider 'nosuch'" in screen_text(app), what="the refusal in the dialog")
        assert isinstance(app.screen, ModelPicker)
        assert app.chat.status().model == "openai/fake-model"
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query_one("#banner").display or "nosuch" not in str(app.query_one("#banner").render())


async def test_slash_model_with_an_unknown_provider_is_the_banner(make_app, tmp_path):
    async with make_app() as (app, pilot):
        await type_text(pilot, "/model nosuch/x")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Unknown provider 'nosuch'" in str(app.query_one("#banner").render()),
                       what="the banner")
        assert not (tmp_path / "state.json").exists()  # a refused model is not remembered
        await type_text(pilot, "/model openai/gpt-4.1")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.status().model == "openai/gpt-4.1", what="the model")
        assert json.loads((tmp_path / "state.json").read_text())["recent_models"] == ["openai/gpt-4.1"]


async def test_providers_without_a_key_say_so_once_and_cannot_be_chosen(make_app):
    async with make_app(remote=True) as (app, pilot):
        app.chat.add_local_servers([DetectedServer("ollama", "http://127.0.0.1:9/v1", ("qwen3:8b",))])
        await open_picker(app, pilot)
        rows = options(app)
        headers = [text for text, _ in rows if not text.startswith("  ")]
        assert "anthropic · no key: set ANTHROPIC_API_KEY" in headers
        assert sum("ANTHROPIC_API_KEY" in text for text, _ in rows) == 1
        assert all(disabled for text, disabled in rows if "anthropic/" in text)
        assert not any(disabled for text, disabled in rows if text.strip().lstrip("● ").startswith("openai/"))
        assert headers.index("ollama (local server)") < headers.index("openai")  # found servers first
        assert any("ollama/qwen3:8b" in text and not disabled for text, disabled in rows)  # what the server runs
        await pilot.press(*"claude-sonnet-4-5", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelPicker) and app.chat.status().model == "openai/fake-model"
        await pilot.press("escape")


async def test_thinking_levels_follow_the_model(make_app):
    async with make_app() as (app, pilot):
        await pilot.press("alt+t")  # openai/fake-model: not in the catalog, does not think
        await wait_for(pilot, lambda: isinstance(app.screen, ThinkingPicker), what="the thinking picker")
        await pilot.pause()
        assert app.screen.levels == ("off",) and "does not think" in screen_text(app)
        await pilot.press("escape")
        await type_text(pilot, "/model openai/gpt-5-mini")  # thinks, but not xhigh
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.status().model == "openai/gpt-5-mini", what="the model")
        await pilot.press("alt+t")
        await wait_for(pilot, lambda: isinstance(app.screen, ThinkingPicker), what="the thinking picker")
        assert app.screen.levels == ("off", "minimal", "low", "medium", "high")
        await pilot.press("escape")
        await type_text(pilot, "/model openai/gpt-5.4")  # thinks up to xhigh
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.status().model == "openai/gpt-5.4", what="the model")
        await pilot.press("alt+t")
        await wait_for(pilot, lambda: isinstance(app.screen, ThinkingPicker), what="the thinking picker")
        assert app.screen.levels[-1] == "xhigh" and app.screen.note is None
        await pilot.press("escape")


async def test_the_picker_asks_the_servers_again_and_names_a_model_file_by_its_name(make_app):
    """A server started after the app is found when the picker opens; its model, whose id is the
    file's path, is listed and shown by the file name, its window unknown ("ctx ?")."""
    from tests.fake_local_server import MODEL_PATH, LocalServer
    from tests.fake_provider import FakeProvider

    async with FakeProvider() as other:
        LocalServer.llama_cpp_python(other)
        async with make_app() as (app, pilot):
            app.models.detect_servers = True
            app.chat.local.servers = (("llamacpp", other.base_url),)  # (started after the app)
            await open_picker(app, pilot)
            shown = "llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf"
            await wait_for(pilot, lambda: any(shown in text for text, _ in options(app)), what="the server's model")
            row = next(text for text, _ in options(app) if shown in text)
            assert MODEL_PATH not in row and "ctx ?" in row
            await pilot.press(*"smollm", "enter")
            await wait_for(pilot, lambda: app.chat.status().model == shown, what="the model chosen")
            assert app.chat.model_ref == f"llamacpp/{MODEL_PATH}"  # the server's own id goes out
            assert "ctx ?" in screen_text(app)
