"""Reading a local server's real context window (and image input) from the server itself, against
loopback fakes of Ollama, llama.cpp, vLLM and LM Studio; and the window an overflow error states."""

from __future__ import annotations

import pytest

from tests.narrow import of
from treechat.llm.detect import (
    OLLAMA_FALLBACK_WINDOW,
    ServerModelInfo,
    detect_model_info,
    is_local_url,
    with_server_facts,
)
from treechat.llm.errors import StatedLimit, stated_context_limit
from treechat.llm.types import ModelInfo

SHOW = {"parameters": "stop \"<|im_end|>\"\ntemperature 0.7",
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
        "capabilities": ["completion", "tools", "vision"]}


async def test_ollama_reports_the_loaded_window_first(fake) -> None:
    fake.script_json(SHOW, path="/api/show")
    fake.script_json({"models": [{"name": "other:7b", "context_length": 2048},
                                 {"name": "qwen2.5vl:7b", "model": "qwen2.5vl:7b", "context_length": 16384}]},
                     path="/api/ps")
    info = await detect_model_info(f"{fake.base_url}/v1", "qwen2.5vl:7b", server="ollama")
    assert info is not None
    assert (info.context_window, info.images) == (16384, True) and "loaded" in info.source
    assert fake.probes[0].body == {"model": "qwen2.5vl:7b"}


async def test_ollama_not_loaded_uses_num_ctx_or_its_small_default(fake) -> None:
    fake.script_json({**SHOW, "parameters": "num_ctx 12288\nstop x"}, path="/api/show")
    fake.script_json({"models": []}, path="/api/ps")
    assert of(ServerModelInfo, await detect_model_info(fake.base_url, "qwen", server="ollama")).context_window == 12288
    fake.script_json({**SHOW, "capabilities": ["completion"]}, path="/api/show")
    fake.script_json({"models": []}, path="/api/ps")
    info = await detect_model_info(fake.base_url, "qwen", server="ollama")
    assert info is not None
    assert (info.context_window, info.images) == (OLLAMA_FALLBACK_WINDOW, False)
    assert "OLLAMA_CONTEXT_LENGTH" in str(info.note)


async def test_llamacpp_props_n_ctx(fake) -> None:
    fake.script_json({"default_generation_settings": {"n_ctx": 8192, "params": {}}, "total_slots": 1,
                      "modalities": {"vision": False}}, path="/props")
    info = await detect_model_info(f"{fake.base_url}/v1", "whatever.gguf", server="llamacpp")
    assert info is not None
    assert (info.context_window, info.images, info.source) == (8192, False, "llama.cpp /props n_ctx")
    fake.script_json({"n_ctx": 4096}, path="/props")  # older builds
    assert of(ServerModelInfo, await detect_model_info(fake.base_url, "m", server="llamacpp")).context_window == 4096


async def test_vllm_max_model_len(fake) -> None:
    fake.script_json({"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 40960}]}, path="/v1/models")
    info = await detect_model_info(f"{fake.base_url}/v1", "Qwen/Qwen3-8B", server="vllm")
    assert info is not None
    assert info.context_window == 40960


async def test_lmstudio_loaded_instance_then_the_v0_listing(fake) -> None:
    fake.script_json({"models": [{"key": "google/gemma-3-4b", "max_context_length": 131072,
                                  "capabilities": {"vision": True},
                                  "loaded_instances": [{"id": "google/gemma-3-4b", "config": {"context_length": 4096}}]}]},
                     path="/api/v1/models")
    info = await detect_model_info(f"{fake.base_url}/v1", "google/gemma-3-4b", server="lmstudio")
    assert info is not None
    assert (info.context_window, info.images) == (4096, True)
    fake.script_status(404, {"error": "no"}, path="/api/v1/models")  # an older LM Studio
    fake.script_json({"data": [{"id": "qwen2-vl-7b-instruct", "type": "vlm", "state": "not-loaded",
                                "max_context_length": 32768}]}, path="/api/v0/models")
    info = await detect_model_info(fake.base_url, "qwen2-vl-7b-instruct", server="lmstudio")
    assert info is not None
    assert (info.context_window, info.images) == (32768, True)


async def test_an_unknown_local_server_is_probed_in_turn(fake) -> None:
    fake.script_json({"data": [{"id": "m", "max_model_len": 2048}]}, path="/v1/models")
    info = await detect_model_info(f"{fake.base_url}/v1", "m")  # /props, /api/show, LM Studio: 404
    assert info is not None and info.context_window == 2048 and [r.path for r in fake.probes][-1] == "/v1/models"


async def test_a_server_that_says_nothing_or_is_gone(fake) -> None:
    assert await detect_model_info(fake.base_url, "m") is None  # every probe answers 404
    assert await detect_model_info("http://127.0.0.1:9", "m", timeout=0.3) is None


async def test_with_server_facts_refines_the_model(fake) -> None:
    fake.script_json({"default_generation_settings": {"n_ctx": 8192}, "modalities": {"vision": True}}, path="/props")
    base = ModelInfo(id="m", provider="llamacpp", base_url=f"{fake.base_url}/v1", known=False)
    model, info = await with_server_facts(base)
    assert (model.context_window, model.input, model.max_tokens) == (8192, ("text", "image"), 2048)
    # a window the person declared that is smaller than the server's is kept
    fake.script_json({"default_generation_settings": {"n_ctx": 8192}}, path="/props")
    declared = ModelInfo(id="m", provider="llamacpp", base_url=fake.base_url, context_window=4096)
    assert (await with_server_facts(declared))[0].context_window == 4096
    cloud = ModelInfo(id="gpt-4.1", provider="openai", base_url="https://api.openai.com/v1")
    assert await with_server_facts(cloud) == (cloud, None)
    assert len([r for r in fake.probes if r.path == "/props"]) == 2


@pytest.mark.parametrize("url,local", [
    ("http://127.0.0.1:11434/v1", True), ("http://localhost:8080", True), ("http://192.168.1.20:1234/v1", True),
    ("http://[::1]:8000/v1", True), ("http://gpu-box.local:8080", True),
    ("https://api.openai.com/v1", False), ("https://openrouter.ai/api/v1", False), ("", False),
])
def test_which_servers_are_worth_asking(url, local) -> None:
    assert is_local_url(url) is local


@pytest.mark.parametrize("message,limit", [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
     StatedLimit(8192, 9000)),
    ("prompt is too long: 213462 tokens > 200000 maximum", StatedLimit(200000, 213462)),
    ("request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", StatedLimit(8192, 9000)),
    ("the model is loaded with context length of only 4096 tokens, which is not enough", StatedLimit(4096)),
    ("The input token count (1,200,000) exceeds the maximum number of tokens allowed (1,048,576).",
     StatedLimit(1048576, 1200000)),
    ("This model's maximum prompt length is 131072 but the request contains 150000 tokens.", StatedLimit(131072, 150000)),
    ("Prompt contains 40000 tokens, too large for model with 32768 maximum context length", StatedLimit(32768)),
    ("prompt token count of 130000 exceeds the limit of 128000", StatedLimit(128000)),
    ("Please reduce the length of the messages or completion.", None),
    ("the request exceeds the available context size, try increasing it", None),
    (None, None),
])
def test_the_window_an_overflow_error_states(message, limit) -> None:
    assert stated_context_limit(message) == limit
