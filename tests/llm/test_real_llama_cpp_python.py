"""Against a real llama-cpp-python server, when one is given (never in CI: it takes minutes):

    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --n_ctx 2048 --port 8080
    TREECHAT_REAL_LLAMA_CPP_PYTHON=http://127.0.0.1:8080 .venv/bin/python -m pytest -q tests/llm/test_real_llama_cpp_python.py

Each quirk `tests/fake_local_server.py` encodes is checked against the real server first, then
treechat is run as `-p` runs it: no config, no key."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from tests.llm.test_local_servers import LONG, ask, bare_chat
from treechat.storage.memory import MemoryCatalog

URL = os.environ.get("TREECHAT_REAL_LLAMA_CPP_PYTHON", "").rstrip("/")
pytestmark = pytest.mark.skipif(not URL, reason="set TREECHAT_REAL_LLAMA_CPP_PYTHON to a llama-cpp-python server")


class Real:
    """Stands where the fake stands for bare_chat: the server's base URL."""

    base_url = URL


async def test_the_quirks_the_fake_encodes_are_the_real_servers() -> None:
    async with httpx.AsyncClient(timeout=120, trust_env=False) as client:
        listing = (await client.get(f"{URL}/v1/models")).json()
        model = listing["data"][0]["id"]
        assert model.endswith(".gguf") and "max_model_len" not in listing["data"][0]  # a path, no window
        assert (await client.get(f"{URL}/props")).status_code == 404
        parts = {"model": model, "max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
        streamed = await client.post(f"{URL}/v1/chat/completions", json={**parts, "stream": True})
        assert streamed.status_code == 200 and not streamed.text.strip()  # 200, then nothing
        with pytest.raises(httpx.TransportError):  # and the kept-alive connection is dead
            await client.post(f"{URL}/v1/chat/completions", json=parts)
    async with httpx.AsyncClient(timeout=120, trust_env=False) as client:
        plain = await client.post(f"{URL}/v1/chat/completions", json=parts)
        assert plain.status_code == 500 and "can only concatenate str" in plain.text
        text = {"model": model, "max_tokens": 4, "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": "hi"}]}
        frames = [line[6:] for line in (await client.post(f"{URL}/v1/chat/completions", json=text)).text.splitlines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
        assert frames and not any(json.loads(f).get("usage") for f in frames)  # no usage when streaming
        long = {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": "word " * 2500}]}
        over = await client.post(f"{URL}/v1/chat/completions", json=long)
        assert over.status_code == 400 and "maximum context length is" in over.text  # only without streaming
        null = {"model": model, "max_tokens": 4, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
        assert (await client.post(f"{URL}/v1/chat/completions", json=null)).status_code == 500


async def test_print_mode_with_no_config_or_key_answers_and_a_long_conversation_keeps_going(tmp_path) -> None:
    chat = await bare_chat(tmp_path / "home", Real())
    code, out, err = await ask(chat, "hi")
    assert code == 0 and out.strip(), err
    await chat.close()
    catalog = MemoryCatalog()
    where = f'[providers.llamacpp]\nbase_url = "{URL}/v1"\n'
    for turn in range(4):
        chat = await bare_chat(tmp_path / "long", Real(), catalog=catalog, config=where)
        code, out, err = await ask(chat, f"Question {turn}. {LONG} {LONG} What do tomatoes need?")
        assert code == 0 and out.strip(), (turn, err)
        await chat.close()
    entries = await (await catalog.open((await catalog.list())[0].id)).get_entries()
    assert any(e.type == "compaction" for e in entries)
