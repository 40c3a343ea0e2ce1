"""config.toml, the registry (provider/model refs, env overrides, keys) and local detection."""

from __future__ import annotations

import pytest

from treechat.config.settings import ConfigError, load_settings
from treechat.llm.detect import detect_local_servers
from treechat.llm.registry import ModelRefError, ModelRegistry


def write(tmp_path, text):
    (tmp_path / "config.toml").write_text(text)
    return tmp_path


def test_no_config_is_fine(tmp_path) -> None:
    s = load_settings(tmp_path, env={})
    assert s.home == tmp_path and s.providers == {} and s.model is None


def test_config_providers_models_and_keys(tmp_path) -> None:
    write(tmp_path, """
model = "local/qwen3-8b"
thinking = "low"
tools = ["read", "ls"]

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
api = "openai"
api_key_env = "LOCAL_KEY"
models = { "qwen3-8b" = { context_window = 32768, reasoning = true } }

[providers.anthropic]
api_key = "from-config"
""")
    s = load_settings(tmp_path, env={"LOCAL_KEY": "lk", "ANTHROPIC_API_KEY": "from-env"})
    assert (s.model, s.thinking, s.tools) == ("local/qwen3-8b", "low", ["read", "ls"])
    reg = ModelRegistry(s)
    m = reg.resolve("local/qwen3-8b")
    assert (m.base_url, m.api, m.context_window, m.reasoning, m.known) == ("http://127.0.0.1:8080/v1", "openai", 32768, True, True)
    assert reg.api_key("local") == "lk"
    assert reg.api_key("anthropic") == "from-config"  # config wins over the environment
    assert "from-config" not in repr(s)


@pytest.mark.parametrize("text,line,words", [
    ('model = "x"\n', 1, "PROVIDER/MODEL-ID"),
    ('\n[providers.foo]\nbase_url = "http://x"\napi = "gemini"\n', 4, '"openai", "anthropic" or "openai-responses"'),
    ('thinking = "max"\n', 1, "thinking must be one of"),
    ('[providers.foo]\nmodels = 3\n', 2, "models must be"),
])
def test_bad_config_names_file_and_line(tmp_path, text, line, words) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert f"config.toml, line {line}:" in str(err.value) and words in str(err.value)


def test_toml_syntax_error_names_the_file_and_line(tmp_path) -> None:
    write(tmp_path, 'model = "a/b"\n[providers.x\n')
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert "config.toml" in str(err.value) and "line 2" in str(err.value)


def test_env_base_urls_and_keys() -> None:
    reg = ModelRegistry(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k1"})
    m = reg.resolve("openai/gpt-4.1")
    assert m.base_url == "http://127.0.0.1:9/v1" and m.context_window == 1047576 and m.cost.input == 2
    assert reg.api_key("openai") == "k1" and reg.api_key("anthropic") is None


def test_unknown_model_ids_get_defaults_and_ids_may_contain_slashes() -> None:
    reg = ModelRegistry(env={})
    m = reg.resolve("openrouter/some-vendor/new-model")
    assert (m.id, m.known, m.context_window, m.max_tokens, m.cost.input) == ("some-vendor/new-model", False, 128000, 16384, 0.0)


@pytest.mark.parametrize("ref,words", [("gpt-4.1", "PROVIDER/MODEL-ID"), ("nope/x", "Unknown provider 'nope'")])
def test_bad_refs(ref, words) -> None:
    with pytest.raises(ModelRefError, match=words):
        ModelRegistry(env={}).resolve(ref)


async def test_detects_servers_from_their_model_lists(fake) -> None:
    fake.script_json({"models": [{"name": "qwen3:8b"}, {"name": "llama3.2"}]}, path="/api/tags")
    fake.script_json({"object": "list", "data": [{"id": "local-model"}]}, path="/v1/models")
    found = await detect_local_servers((("ollama", fake.base_url), ("vllm", fake.base_url), ("llamacpp", "http://127.0.0.1:9")))
    assert [(s.provider, s.models) for s in found] == [("ollama", ("qwen3:8b", "llama3.2")), ("vllm", ("local-model",))]
    assert found[0].base_url == fake.base_url + "/v1"


@pytest.mark.parametrize("text,line,words", [
    ('default_model = "openai/x"\n', 1, "unknown key 'default_model' (did you mean 'model'?)"),
    ('thinking_level = "low"\n', 1, "unknown key 'thinking_level' (did you mean 'thinking'?)"),
    ('\n\n[providers.foo]\nbase_url = "http://x"\nbase_ulr = "y"\n', 5, "unknown key 'base_ulr' (did you mean 'base_url'?)"),
    ('[[providers.foo.models]]\nid = "m"\ncontext_windw = 3\n', 3, "unknown key 'context_windw' (did you mean 'context_window'?)"),
    ('idle_timeout = -1\n', 1, "idle_timeout should be greater than 0"),
])
def test_unknown_or_mistyped_keys_are_one_line_naming_the_key(tmp_path, text, line, words) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    message = str(err.value)
    assert f"config.toml, line {line}:" in message and words in message and "\n" not in message


def test_models_as_array_of_tables_declare_input_and_window(tmp_path) -> None:
    write(tmp_path, """
[providers.local]
base_url = "http://127.0.0.1:8080/v1"

[[providers.local.models]]
id = "text-only"
input = ["text"]
context_window = 8192

[[providers.local.models]]
id = "vision"
input = ["text", "image"]
max_tokens = 1000
""")
    reg = ModelRegistry(load_settings(tmp_path, env={}))
    text_only, vision = reg.resolve("local/text-only"), reg.resolve("local/vision")
    assert (text_only.input, text_only.context_window) == (("text",), 8192)
    assert (vision.input, vision.max_tokens) == (("text", "image"), 1000)
