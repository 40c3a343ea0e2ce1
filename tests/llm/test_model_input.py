"""What each model takes as input: the catalog's facts, a provider's defaults for ids it does not
list, and the config's [[providers.NAME.models]] tables (input, context_window, max_tokens)."""

from __future__ import annotations

from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry


def test_catalog_and_provider_defaults(tmp_path) -> None:
    reg = ModelRegistry(load_settings(tmp_path, env={}))
    assert "image" in reg.resolve("anthropic/claude-sonnet-4-5").input
    assert "image" not in reg.resolve("xai/grok-code-fast-1").input
    # ids the catalog does not list: every Claude and current OpenAI model takes images
    unknown_claude = reg.resolve("anthropic/claude-future-9")
    assert unknown_claude.input == ("text", "image") and unknown_claude.context_window == 200_000
    assert not unknown_claude.known
    assert reg.resolve("openai/gpt-future").input == ("text", "image")
    assert reg.resolve("ollama/qwen3:8b").input == ("text",)  # a local model: text until its server says


def test_config_tables_reach_the_model_and_keep_provider_defaults(tmp_path) -> None:
    (tmp_path / "config.toml").write_text("""
[providers.openai]
[[providers.openai.models]]
id = "my-text-model"
input = ["text"]
context_window = 8192
max_tokens = 2048

[[providers.openai.models]]
id = "my-other-model"
""")
    reg = ModelRegistry(load_settings(tmp_path, env={}))
    model = reg.resolve("openai/my-text-model")
    assert (model.input, model.context_window, model.max_tokens) == (("text",), 8192, 2048)
    assert reg.resolve("openai/my-other-model").input == ("text", "image")  # the provider default survives
