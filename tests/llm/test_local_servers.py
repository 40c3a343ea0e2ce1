"""Works with the servers people run (issue 20), against tests/fake_local_server.py: the quirks a
real llama-cpp-python 0.3.36 server showed, and the shapes of llama.cpp, Ollama, vLLM and LM Studio.

With no config and no key, print mode finds the server and answers; a conversation of long
prompts keeps being answered against a 2,048-token window, compacting as it goes; a stream that
ends with no data is asked again without streaming and the server's own reason is shown."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_local_server import MODEL_PATH, LocalServer
from treechat.chat import Chat
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.config.state import StateFile
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import LlmMessage
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import MessageEntry

LONG = " ".join(f"Tomatoes need sun and steady watering, note {i}." for i in range(45))  # ~2,200 chars


async def bare_chat(home: Path, fake: Any, *, name: str = "llamacpp", config: str = "",
                    catalog: MemoryCatalog | None = None) -> Chat:
    """A chat as `treechat -p` makes it on a fresh machine: no key, no model, the server found on
    its port (here the fake's)."""
    home.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240  a local temp folder
    if config:
        (home / "config.toml").write_text(config)
    settings = load_settings(home, env={})
    catalog = catalog or MemoryCatalog()
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env={}), cwd=str(home),
                local_servers=((name, fake.base_url),))
    sessions = await catalog.list()
    await chat.open(await catalog.open(sessions[0].id) if sessions else await catalog.create(cwd=str(home)))
    return chat


async def ask(chat: Chat, prompt: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_print(chat, prompt, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def chats(fake: Any) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


async def test_no_config_no_key_print_mode_finds_llama_cpp_python_and_answers(fake, tmp_path) -> None:
    LocalServer.llama_cpp_python(fake, window=4096)  # (room for the default tools' ~1,900 tokens)
    chat = await bare_chat(tmp_path / "home", fake)
    code, out, err = await ask(chat, "hi")
    assert (code, out) == (0, "ok\n"), err
    (body,) = chats(fake)
    assert body["model"] == MODEL_PATH  # the server's own id goes out…
    assert chat.status().model == "llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf"  # …a person sees the file name
    assert all(isinstance(m["content"], str) for m in body["messages"])  # its templates concatenate strings
    assert "max_tokens" not in body  # nobody said how large the window is: the server's own default
    assert chat.status().context_percent is None  # "ctx ?"
    await chat.close()


async def test_long_prompts_keep_being_answered_against_2048_tokens_compacting_as_they_go(fake, tmp_path) -> None:
    server = LocalServer.llama_cpp_python(fake, window=2048)
    catalog = MemoryCatalog()
    # (its port: the session names the model; no tools: their ~1,900 tokens leave a 2k window no room, README says)
    where = f'tools = []\n[providers.llamacpp]\nbase_url = "{fake.base_url}/v1"\n'
    for turn in range(8):  # one `treechat -p … -c` after another, on one session
        chat = await bare_chat(tmp_path / "home", fake, catalog=catalog, config=where)
        code, out, err = await ask(chat, f"Question {turn}. {LONG} What do tomatoes need?")
        assert (code, out) == (0, "ok\n"), (turn, err)
        await chat.close()
    # the first overflow came back as an empty stream; asked without streaming, the server stated
    # its window, which is remembered: from then on nothing goes out that does not fit
    assert server.failures == ["overflow", "overflow"]  # one request: streamed, then asked again
    assert len(set(server.overflows)) == 1
    assert StateFile(tmp_path / "home").learned_window(f"{fake.base_url}/v1", MODEL_PATH) == 2048
    assert server.summaries >= 3 and all(n <= 2048 for n in server.accepted)
    session = (await catalog.list())[0]
    entries = await (await catalog.open(session.id)).get_entries()
    assert sum(e.type == "compaction" for e in entries) >= 3
    assert sum(isinstance(e, MessageEntry) and e.message.role == "user" for e in entries) == 8  # nothing lost


async def test_a_window_declared_in_config_with_no_usage_compacts_from_the_estimate(fake, tmp_path) -> None:
    """The server sends no usage: compaction fires from the token estimate, before a request
    that would not fit (it was sent whole until the server refused it, ctx at 124% and 147%);
    the declared max_tokens goes out with every request (it was never sent)."""
    server = LocalServer.llama_cpp_python(fake, window=2048)
    config = (f'tools = []\n[providers.llamacpp]\nbase_url = "{fake.base_url}/v1"\n'  # (a 2k window: no room for tools)
              f'models = [{{ id = "{MODEL_PATH}", context_window = 2048, max_tokens = 300 }}]\n')
    catalog = MemoryCatalog()
    for turn in range(6):
        chat = await bare_chat(tmp_path / "home", fake, config=config, catalog=catalog)
        code, out, err = await ask(chat, f"Question {turn}. {LONG}")
        assert (code, out) == (0, "ok\n"), (turn, err)
        percent = chat.status().context_percent
        assert percent is not None and percent < 100
        await chat.close()
    assert server.overflows == [] and server.summaries >= 2
    assert all(body["max_tokens"] == 300 for body in chats(fake) if "summarization" not in json.dumps(body))


async def test_an_empty_stream_is_asked_again_and_the_server_reason_shown(fake, tmp_path) -> None:
    """Parts (an image) to a server whose templates take strings: the stream ends with no data;
    the error is the server's own, not "ended without its end marker … try again"."""
    from tests.images import png_bytes, write

    LocalServer.llama_cpp_python(fake)
    config = (f'[providers.llamacpp]\nbase_url = "{fake.base_url}/v1"\n'
              f'models = [{{ id = "{MODEL_PATH}", input = ["text", "image"] }}]\n')
    write(tmp_path / "home" / "shot.png", png_bytes(2, 2))
    chat = await bare_chat(tmp_path / "home", fake, config=config)
    code, out, err = await ask(chat, "what is in @shot.png")
    assert code == 1 and out == ""
    assert 'can only concatenate str (not "list") to str' in err and "HTTP 500" in err
    assert "end marker" not in err and "try again" not in err
    streamed, again = chats(fake)
    assert streamed["stream"] is True and again["stream"] is False and "stream_options" not in again
    await chat.close()


async def test_an_empty_stream_whose_repeat_answers_is_the_reply(fake, tmp_path) -> None:
    from tests.fake_provider import SSE_HEADERS, Status

    server = LocalServer.llama_cpp_python(fake, window=4096)  # (room for the default tools)
    answer = server.answer
    fake.responder = lambda r: [Status(200, SSE_HEADERS)] if r.body and r.body.get("stream") else answer(r)
    chat = await bare_chat(tmp_path / "home", fake)
    assert (await ask(chat, "hi"))[:2] == (0, "ok\n")
    await chat.close()


async def test_a_null_assistant_content_is_never_sent(fake, tmp_path) -> None:
    """Beside tool calls, content goes out as "" (llama-cpp-python's request check refuses null)."""
    from treechat.llm.openai import build_body
    from treechat.llm.types import LlmContext, ModelInfo, StreamOptions
    from treechat.storage.model import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage

    model = ModelInfo(id="m", provider="llamacpp", base_url=fake.base_url)
    messages: list[LlmMessage] = [UserMessage(content="read it"),
                AssistantMessage(content=[ToolCall(id="c1", name="read", arguments={"path": "a"})]),
                ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")])]
    body: dict = build_body(model, LlmContext("", messages), StreamOptions())  # (JSON: read as it was built)
    assert body["messages"][1]["content"] == "" and body["messages"][1]["tool_calls"]


# ---------------------------------------------------------------- the other servers


@pytest.mark.parametrize("preset,name,window", [("llama_cpp", "llamacpp", 4096), ("ollama", "ollama", 4096),
                                                ("vllm", "vllm", 8192), ("lmstudio", "lmstudio", 4096)])
async def test_each_server_says_its_window_and_the_conversation_fits_it(fake, tmp_path, preset, name, window) -> None:
    server = getattr(LocalServer, preset)(fake, window=window, usage=False)
    catalog = MemoryCatalog()
    where = f'tools = []\n[providers.{name}]\nbase_url = "{fake.base_url}/v1"\n'  # (the talk alone fills these)
    for turn in range(window // 500):
        chat = await bare_chat(tmp_path / "home", fake, name=name, catalog=catalog, config=where)
        chat.add_local_servers(await chat.local.found())  # as the app does at start-up
        await chat.local.settled()  # (the window is asked in the background; here it has answered)
        model = chat.current_model()
        assert model is not None and model.window_known and model.context_window == window
        code, out, err = await ask(chat, f"Question {turn}. {LONG}")
        assert (code, out) == (0, "ok\n"), (turn, err)
        await chat.close()
    assert server.overflows == [] and server.summaries >= 1
    if preset == "vllm":  # it refuses prompt + max_tokens over its window: the reply limit is sized to it
        assert all(b.get("max_tokens") == window // 4 for b in chats(fake) if "summarization" not in json.dumps(b))


# ---------------------------------------------------------------- probes never hold a message


async def test_a_message_goes_out_at_once_while_the_window_probe_trickles(fake, tmp_path, monkeypatch) -> None:
    """Issue 27: the server's probe endpoints answer a byte at a time; the message is sent and
    answered meanwhile (the probe, given a minute here, is still open when the reply is in)."""
    monkeypatch.setattr("treechat.local_models.PROBE_TIMEOUT", 60.0)
    LocalServer.llama_cpp(fake, trickle_probes=True)
    config = f'model = "mybox/model.gguf"\n[providers.mybox]\nbase_url = "{fake.base_url}/v1"\n'
    chat = await bare_chat(tmp_path / "home", fake, config=config)  # (asks the server from start-up)
    code, out, err = await ask(chat, "hi")
    assert (code, out) == (0, "ok\n"), err
    assert fake.probes and fake.disconnects == 0  # the probe had not finished: nothing waited for it
    await chat.close()


async def test_probe_answers_are_bounded_in_bytes_and_in_time(fake) -> None:
    from tests.fake_provider import Drip, Status
    from treechat.llm.detect import MAX_ANSWER_BYTES, detect_local_servers, detect_model_info

    fake.enqueue([Status(200, {"Content-Type": "application/json"}), Drip(b"x" * 65536, every=0.0)], path="/props")
    assert await detect_model_info(fake.base_url, "m", server="llamacpp", timeout=30) is None
    await fake.client_disconnected.wait()
    assert fake.dripped < 2 * MAX_ANSWER_BYTES  # (it was read whole: 7.7 GB)
    fake.client_disconnected.clear()
    fake.enqueue([Status(200, {"Content-Type": "application/json"}), Drip(b" ", every=0.05)], path="/v1/models")
    assert await detect_local_servers((("vllm", fake.base_url),), timeout=0.3) == []
    await fake.client_disconnected.wait()  # a trickle is cut at the total time, not read for ever


@pytest.mark.parametrize("model_id,shown", [
    ("/work/models/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("./models/x.gguf", "x.gguf"), ("~/m/qwen.bin", "qwen.bin"), ("C:\\models\\phi.gguf", "phi.gguf"),
    ("models/llama-3.gguf", "llama-3.gguf"),
    ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"), ("qwen3:8b", "qwen3:8b"), ("google/gemma-3-4b", "google/gemma-3-4b"),
])
def test_a_model_named_by_its_file_path_is_shown_by_the_file_name(model_id, shown) -> None:
    from treechat.llm.local import shown_model_id

    assert shown_model_id(model_id) == shown


async def test_a_reply_the_server_cut_short_says_so(fake, tmp_path) -> None:
    """llama-cpp-python, when another request reaches it mid-reply: one chunk, `[DONE]` without a
    finish reason, and the connection dropped (a request treechat itself never sends meanwhile)."""
    from tests.fake_provider import SSE_HEADERS, Reset, Send, Status, sse_frame

    first = {"choices": [{"index": 0, "delta": {"content": "Once"}, "finish_reason": None}]}
    fake.enqueue([Status(200, SSE_HEADERS), Send(sse_frame(first)), Send(sse_frame("[DONE]")), Reset()])
    config = f'model = "mybox/m.gguf"\n[providers.mybox]\nbase_url = "{fake.base_url}/v1"\n'
    chat = await bare_chat(tmp_path / "home", fake, config=config)
    code, out, err = await ask(chat, "tell me a story")
    assert code == 1 and "--interrupt_requests False" in err
    await chat.close()
