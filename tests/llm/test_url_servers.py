"""Any OpenAI-compatible server by its URL (issue 37): `OPENAI_BASE_URL` (or a base_url in
config.toml listing no models) at a server here or elsewhere. Its models are what its own
`/models` lists, asked bounded in bytes and time; a server on this machine needs no key; `-p`
with no model uses its first model; OpenAI itself (no base URL) keeps the catalog."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.fake_local_server import MODEL_PATH, LocalServer
from tests.fake_provider import Drip, FakeProvider, Status
from treechat.chat import Chat, ChatError
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.detect import MAX_ANSWER_BYTES, DetectedServer, Unanswered, UrlServer, ask_url_servers
from treechat.llm.registry import ModelRegistry
from treechat.storage.memory import MemoryCatalog

KEY = "sk-url-server-SECRET-42"


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def listing(*ids: str) -> dict[str, object]:
    return {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "me"} for i in ids]}


# ---------------------------------------------------------------- the registry


def test_openai_itself_keeps_its_catalog_and_is_asked_nothing() -> None:
    registry = ModelRegistry(env={"OPENAI_API_KEY": KEY})
    listed = [m.ref for m in registry.models() if m.provider == "openai"]
    assert "openai/gpt-4.1-mini" in listed and registry.url_servers() == []
    assert registry.resolve("openai/gpt-4.1-mini").compat.max_tokens_field == "max_completion_tokens"


def test_a_base_url_makes_the_server_list_its_own_models_not_the_catalog() -> None:
    registry = ModelRegistry(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": KEY})
    assert [m for m in registry.models() if m.provider == "openai"] == []  # nothing until it answers
    assert registry.url_servers() == [UrlServer("openai", "http://127.0.0.1:9/v1", "OPENAI_BASE_URL", KEY)]
    registry.serve("openai", ("Qwen/Qwen3-8B", "gpt-4.1-mini"))
    assert [m.ref for m in registry.models() if m.provider == "openai"] == ["openai/Qwen/Qwen3-8B", "openai/gpt-4.1-mini"]
    # what the catalog knows about an id stays; OpenAI's own request quirks do not go to another server
    assert registry.resolve("openai/gpt-4.1-mini").known
    assert registry.resolve("openai/Qwen/Qwen3-8B").compat.max_tokens_field == "max_tokens"


def test_a_server_here_needs_no_key_and_a_remote_one_does() -> None:
    local = ModelRegistry(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert local.key_problem(local.resolve("openai/anything")) is None
    remote = ModelRegistry(env={"OPENAI_BASE_URL": "https://llm.example.invalid/v1"})
    assert "OPENAI_API_KEY" in (remote.key_problem(remote.resolve("openai/anything")) or "")
    assert remote.url_servers()[0].local is False


def test_config_models_are_the_list_and_the_server_is_not_asked(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["mine"]\n'
                                          '\n[providers.box]\nbase_url = "https://box.example.invalid/v1"\n')
    registry = ModelRegistry(load_settings(tmp_path, env={}), env={})
    assert [m.ref for m in registry.models() if m.provider == "openai"] == ["openai/mine"]
    assert [(s.provider, s.source) for s in registry.url_servers()] == [("box", "config.toml")]


# ---------------------------------------------------------------- asking the server


@pytest.mark.parametrize("preset, model_id", [(LocalServer.vllm, "Qwen/Qwen3-8B"),
                                              (LocalServer.llama_cpp_python, MODEL_PATH),
                                              (LocalServer.llama_cpp, "model.gguf")])
async def test_the_server_lists_its_models_with_the_key_sent_to_it(fake, preset, model_id) -> None:
    preset(fake)
    [answer] = await ask_url_servers([UrlServer("openai", f"{fake.base_url}/v1", "OPENAI_BASE_URL", KEY)])
    assert answer == DetectedServer("openai", f"{fake.base_url}/v1", (model_id,), by_url=True)
    assert fake.probes[-1].path == "/v1/models" and fake.probes[-1].headers["authorization"] == f"Bearer {KEY}"


async def test_a_base_url_without_v1_is_asked_at_its_own_models(fake) -> None:
    fake.script_json(listing("a", "b"), path="/models")
    [answer] = await ask_url_servers([UrlServer("openai", fake.base_url, "OPENAI_BASE_URL")])
    assert isinstance(answer, DetectedServer) and answer.models == ("a", "b")
    assert "authorization" not in fake.probes[-1].headers  # no key, none sent


async def test_a_trickling_server_counts_as_silent_within_its_bound(fake) -> None:
    LocalServer.vllm(fake, trickle_probes=True)
    [answer] = await ask_url_servers([UrlServer("openai", f"{fake.base_url}/v1", "OPENAI_BASE_URL")], local_timeout=0.3)
    assert isinstance(answer, Unanswered) and "0.3 s" in answer.reason


async def test_an_answer_over_the_byte_bound_is_not_read(fake) -> None:
    fake.enqueue([Status(200, {"Content-Type": "application/json"}, "chunked"),
                  Drip(b"x" * 65536, every=0, max_bytes=MAX_ANSWER_BYTES * 2)], path="/v1/models")
    [answer] = await ask_url_servers([UrlServer("openai", f"{fake.base_url}/v1", "OPENAI_BASE_URL")])
    assert isinstance(answer, Unanswered) and "over 1 MB" in answer.reason


async def test_a_refused_key_and_a_closed_port_say_why(fake) -> None:
    fake.script_status(401, {"error": {"message": "bad key"}}, path="/v1/models")
    refused, nobody = await ask_url_servers([UrlServer("openai", f"{fake.base_url}/v1", "OPENAI_BASE_URL", KEY),
                                             UrlServer("box", "http://127.0.0.1:9/v1", "config.toml")])
    assert isinstance(refused, Unanswered) and refused.refused_key and "HTTP 401" in refused.reason
    assert isinstance(nobody, Unanswered) and nobody.reason == "nothing answers at that address"


# ---------------------------------------------------------------- -p with no model


async def run_p(tmp_path: Path, env: dict[str, str], prompt: str = "hi") -> tuple[int, str, str]:
    settings = load_settings(tmp_path, env=env)
    catalog = MemoryCatalog()
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=None,
                cwd=str(tmp_path), local_servers=())
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    out, err = io.StringIO(), io.StringIO()
    try:
        code = await run_print(chat, prompt, out=out, err=err)
    finally:
        await chat.close()
    return code, out.getvalue(), err.getvalue()


async def test_p_without_a_model_or_a_key_uses_the_servers_first_model(fake, tmp_path) -> None:
    fake.script_json(listing("first-model", "second-model"), path="/v1/models")
    fake.script_openai(["hello from the server"])
    code, out, err = await run_p(tmp_path, {"OPENAI_BASE_URL": f"{fake.base_url}/v1"})
    assert (code, out.strip()) == (0, "hello from the server"), err
    assert fake.requests[0].body["model"] == "first-model"
    assert "authorization" not in fake.requests[0].headers
    assert "max_completion_tokens" not in fake.requests[0].body  # OpenAI's own field, not another server's


async def test_p_with_a_key_sends_it_to_the_server_named(fake, tmp_path) -> None:
    LocalServer.llama_cpp_python(fake, window=4096, reply="from llama-cpp-python")  # (room for the default tools)
    code, out, err = await run_p(tmp_path, {"OPENAI_BASE_URL": f"{fake.base_url}/v1", "OPENAI_API_KEY": KEY})
    assert (code, out.strip()) == (0, "from llama-cpp-python"), err
    assert fake.requests[0].body["model"] == MODEL_PATH
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_p_with_a_silent_server_says_which_and_how_to_go_on(tmp_path) -> None:
    with pytest.raises(ChatError) as err:
        settings = load_settings(tmp_path, env={})
        env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
        catalog = MemoryCatalog()
        chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=None,
                    cwd=str(tmp_path), local_servers=())
        await chat.open(await catalog.create(cwd=str(tmp_path)))
        try:
            await chat.ensure_agent()
        finally:
            await chat.close()
    said = str(err.value)
    assert "http://127.0.0.1:9/v1 (OPENAI_BASE_URL) did not list its models" in said
    assert "--model openai/MODEL-ID" in said

