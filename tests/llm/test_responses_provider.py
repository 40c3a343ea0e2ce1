"""The Responses API as a provider: chosen by the catalog for OpenAI's codex models, by config.toml
for any provider or model, and driven end to end through `-p` (the real agent loop, a tool, a
second turn that carries the stored reasoning) against the loopback fake."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from tests.fake_provider import FakeProvider
from treechat.cli.main import build_parser, cmd_print
from treechat.config.settings import ConfigError, load_settings
from treechat.llm.apis import APIS, TITLES, Api
from treechat.llm.catalog import builtin_providers
from treechat.llm.registry import ModelRegistry, adapter


def test_every_api_has_an_adapter_and_the_catalog_names_only_those() -> None:
    assert set(APIS) == set(get_args(Api)) == {"openai", "anthropic", "openai-responses"}
    assert {api: getattr(adapter(api), "__name__", None) for api in APIS} == {
        "openai": "stream_openai", "anthropic": "stream_anthropic", "openai-responses": "stream_responses"}
    for provider in builtin_providers().values():
        assert provider.api in APIS
        assert all(spec.get("api", provider.api) in APIS for spec in provider.models.values())


def test_help_names_the_apis() -> None:
    shown = " ".join(build_parser().format_help().split())
    assert ", ".join(f"{api} ({title})" for api, title in TITLES.items()) in shown
    assert "`treechat doctor` shows the API of each provider" in shown


def test_the_built_in_openai_provider_speaks_responses_for_its_codex_models() -> None:
    reg = ModelRegistry(None, env={"OPENAI_API_KEY": "k"})
    assert reg.resolve("openai/gpt-5.3-codex").api == "openai-responses"
    assert reg.resolve("openai/gpt-4.1-mini").api == "openai"
    assert reg.resolve("openai/some-new-id").api == "openai"  # unknown ids: the provider's
    api, others = reg.apis("openai")
    assert api == "openai" and others["gpt-5.1-codex-max"] == "openai-responses" and "gpt-4.1" not in others
    codex = reg.resolve("openai/gpt-5.1-codex-mini")
    assert codex.reasoning and codex.compat.supports_minimal is False


def test_config_sets_the_api_of_a_provider_or_of_one_model(tmp_path) -> None:
    (tmp_path / "config.toml").write_text("""
[providers.gateway]
base_url = "https://gateway.example/v1"
api = "openai-responses"
models = ["gpt-5.3-codex", "other"]

[providers.openai.models."gpt-9-codex"]
api = "openai-responses"
reasoning = true
""")
    reg = ModelRegistry(load_settings(tmp_path, env={}), env={})
    assert reg.resolve("gateway/other").api == "openai-responses"
    assert reg.resolve("gateway/anything").api == "openai-responses"
    assert reg.resolve("openai/gpt-9-codex").api == "openai-responses"
    assert reg.resolve("openai/gpt-4.1").api == "openai"


def test_a_model_api_that_is_not_one_of_ours_is_one_line(tmp_path) -> None:
    (tmp_path / "config.toml").write_text('[providers.openai.models."x"]\napi = "gemini"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert '"openai", "anthropic" or "openai-responses"' in str(err.value)


def script_tool_then_answer(fake: FakeProvider) -> None:
    fake.script_responses(reasoning=[["I should ", "read it"]], encrypted="ENC-1",
                          tool_calls=[{"call_id": "call_r", "name": "read", "arguments": ['{"path": ', '"note.txt"}']}],
                          usage={"input_tokens": 120, "input_tokens_details": {"cached_tokens": 100},
                                 "output_tokens": 40})
    fake.script_responses(["It says ", "hello."], reasoning=[["Read it."]], encrypted="ENC-2")


async def test_print_mode_runs_a_tool_round_trip_and_carries_the_reasoning(tmp_path, monkeypatch) -> None:
    (tmp_path / "note.txt").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text('thinking = "high"\n')
    home = ["--home", str(tmp_path / "home")]
    async with FakeProvider() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
        script_tool_then_answer(fake)
        args = build_parser().parse_args([*home, "--model", "openai/gpt-5.3-codex", "--tools", "read",
                                          "-p", "what does note.txt say?"])
        assert await cmd_print(args) == 0
        first, second = fake.requests
        fake.script_responses(["Bye."])
        args = build_parser().parse_args([*home, "--model", "openai/gpt-5.3-codex", "-c", "-p", "thanks"])
        assert await cmd_print(args) == 0  # a new process's turn: the reasoning comes from the store
        third = fake.requests[2]
    assert {r.path for r in (first, second, third)} == {"/responses"}
    assert first.body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert first.body["include"] == ["reasoning.encrypted_content"]
    assert first.body["tools"][0]["name"] == "read" and first.body["tools"][0]["strict"] is False
    carried = [i for i in second.body["input"] if i.get("type") in ("reasoning", "function_call", "function_call_output")]
    assert carried[0] == {"type": "reasoning", "encrypted_content": "ENC-1",
                          "summary": [{"type": "summary_text", "text": "I should read it"}]}
    assert carried[1] == {"type": "function_call", "call_id": "call_r", "name": "read",
                          "arguments": json.dumps({"path": "note.txt"})}
    assert carried[2]["type"] == "function_call_output" and carried[2]["call_id"] == "call_r"
    assert "hello" in carried[2]["output"]
    reasoning = [i["encrypted_content"] for i in third.body["input"] if i.get("type") == "reasoning"]
    assert reasoning == ["ENC-1", "ENC-2"]
    assert third.body["input"][-1] == {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]}


async def test_a_config_provider_with_the_responses_api_answers_in_print_mode(tmp_path, capsys) -> None:
    async with FakeProvider() as fake:
        home = tmp_path / "home"
        home.mkdir()
        (home / "config.toml").write_text(f"""
model = "codexy/gpt-5.3-codex"

[providers.codexy]
api = "openai-responses"
base_url = "{fake.base_url}/v1"
api_key = "sk-config-key-0123456789"
models = ["gpt-5.3-codex"]
""")
        fake.script_responses(["Hi ", "there."], usage={"input_tokens": 9, "output_tokens": 3})
        assert await cmd_print(build_parser().parse_args(["--home", str(home), "-p", "hello"])) == 0
        request = fake.requests[0]
    assert capsys.readouterr().out.strip() == "Hi there."
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer sk-config-key-0123456789"
    assert request.body["model"] == "gpt-5.3-codex" and request.body["store"] is False
