"""The OpenAI Chat Completions adapter against the loopback fake server."""

from __future__ import annotations

import pytest

from tests.fake_provider import openai_chunks, sse_frame
from treechat.llm.abort import AbortSignal
from treechat.llm.openai import stream_openai
from treechat.llm.types import LlmContext, LlmMessage, StreamOptions, ToolSpec
from treechat.storage.model import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from .conftest import model_for


async def run(fp, options=None, signal=None, context=None, **model_kw):
    model = model_for(fp, "openai", **model_kw)
    ctx = context or LlmContext("be brief", [UserMessage(content="hi")])
    return [e async for e in stream_openai(model, ctx, options or StreamOptions(api_key="sk-test"), signal)]


async def test_text_stream_with_usage_and_cost(fake) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020, "prompt_tokens_details": {"cached_tokens": 800}}
    fake.script_openai(["Hel", "lo"], usage=usage)
    events = await run(fake)
    assert [e.type for e in events] == ["start", "text_delta", "text_delta", "done"]
    final = events[-1].partial
    assert final.content == [TextContent(text="Hello")]
    assert final.stop_reason == "stop"
    assert (final.usage.input, final.usage.output, final.usage.cache_read) == (200, 20, 800)
    assert final.usage.total_tokens == 1020
    assert final.usage.cost.total == pytest.approx((200 * 1 + 20 * 2 + 800 * 0.5) / 1e6)
    req = fake.requests[0]
    assert req.path == "/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert req.body["stream"] is True and req.body["stream_options"] == {"include_usage": True}


async def test_thinking_then_text(fake) -> None:
    fake.script_openai(["answer"], reasoning=["let me ", "think"], reasoning_field="reasoning")
    final = (await run(fake))[-1].partial
    assert final.content == [ThinkingContent(thinking="let me think"), TextContent(text="answer")]


async def test_tool_call_fragments_keyed_by_index_interleaved(fake) -> None:
    env = {"choices": None}

    def chunk(calls):
        return {"choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]}

    chunks = [
        chunk([{"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": ""}}]),
        chunk([{"index": 1, "id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{\"pa"}}]),
        chunk([{"index": 0, "function": {"arguments": "{\"path\": "}}]),
        chunk([{"index": 1, "function": {"arguments": "th\": \".\"}"}}]),
        chunk([{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**env, "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}},
        "[DONE]",
    ]
    fake.script_openai(chunks=chunks)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "toolUse"
    assert final.content == [
        ToolCall(id="c1", name="read", arguments={"path": "a.txt"}),
        ToolCall(id="c2", name="ls", arguments={"path": "."}),
    ]
    assert final.usage.input == 5


async def test_whole_call_in_one_fragment_empty_args_and_stop_reason_fixup(fake) -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "x", "function": {"name": "ls", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "[DONE]",
    ]
    fake.script_openai(chunks=chunks)
    final = (await run(fake))[-1].partial
    assert final.content == [ToolCall(id="x", name="ls", arguments={})]
    assert final.stop_reason == "toolUse"  # calls were streamed though the reason says stop


@pytest.mark.parametrize("reason,expected", [("length", "length"), ("weird_new_reason", "stop"), ("model_context_window_exceeded", "length")])
async def test_stop_reasons(fake, reason, expected) -> None:
    fake.script_openai(["x"], finish=reason)
    assert (await run(fake))[-1].partial.stop_reason == expected


async def test_request_shapes_for_tools_and_history(fake) -> None:
    fake.script_openai(["ok"])
    history: list[LlmMessage] = [
        UserMessage(content="go"),
        AssistantMessage(content=[TextContent(text="calling"), ToolCall(id="t1", name="read", arguments={"path": "a"})], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="t1", tool_name="read", content=[TextContent(text="A")]),
        AssistantMessage(content=[ToolCall(id="t2", name="read", arguments={})], stop_reason="aborted"),
        UserMessage(content="again"),
    ]
    tools = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]
    await run(fake, context=LlmContext("", history, tools), options=StreamOptions(thinking_level="high"), reasoning=True)
    body = fake.requests[0].body
    assert body["messages"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "calling", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "A"},
        {"role": "user", "content": "again"},
    ]
    assert body["tools"][0]["function"]["name"] == "read"
    assert body["reasoning_effort"] == "high"
    assert "authorization" not in fake.requests[0].headers


async def test_dropped_connection_keeps_partial_text(fake) -> None:
    fake.script_openai(["par", "tial", " more"], drop_after=2)
    final = (await run(fake))[-1]
    assert final.type == "error"
    assert final.partial.stop_reason == "error"
    assert final.partial.content == [TextContent(text="partial")]
    assert "lost" in final.partial.error_message


async def test_missing_terminal_marker_is_an_error(fake) -> None:
    # close-delimited body that ends cleanly, but neither finish_reason nor [DONE] arrived
    fake.script_sse([sse_frame(c) for c in openai_chunks(["a", "b"])[:2]] + [b""], terminal=False)
    final = (await run(fake))[-1]
    assert final.partial.stop_reason == "error"
    assert final.partial.content == [TextContent(text="ab")]
    assert "end marker" in final.partial.error_message


async def test_malformed_chunk_is_an_error(fake) -> None:
    fake.script_sse([sse_frame({"choices": [{"index": 0, "delta": {"content": "ok"}}]}), b"data: {not json\n\n", sse_frame("[DONE]")])
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and "malformed" in final.error_message
    assert final.content == [TextContent(text="ok")]


async def test_error_chunk_inside_a_200_stream(fake) -> None:
    fake.script_openai(chunks=[{"choices": [{"index": 0, "delta": {"content": "a"}}]}, {"error": {"message": "upstream exploded"}}])
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and "upstream exploded" in final.error_message


async def test_hang_before_headers_times_out(fake) -> None:
    fake.script_hang()
    final = (await run(fake, options=StreamOptions(first_byte_timeout=0.2)))[-1].partial
    assert final.stop_reason == "error" and "sent no reply within 0.2 s" in final.error_message
    assert len(fake.requests) == 1  # a timeout already took its whole bound: not retried


async def test_hang_mid_stream_times_out_keeping_text(fake) -> None:
    fake.script_openai(["a", "b", "c"], hang_after=1)
    final = (await run(fake, options=StreamOptions(idle_timeout=0.2)))[-1].partial
    assert final.stop_reason == "error" and "stopped sending" in final.error_message
    assert final.content == [TextContent(text="a")]


async def test_abort_closes_the_request_and_keeps_partial(fake) -> None:
    fake.script_openai(["a", "b"], hang_after=1)
    signal = AbortSignal()
    model = model_for(fake, "openai")
    events = []
    async for ev in stream_openai(model, LlmContext("", [UserMessage(content="hi")]), StreamOptions(), signal):
        events.append(ev)
        if ev.type == "text_delta":
            signal.abort()
    assert events[-1].type == "error"
    assert events[-1].partial.stop_reason == "aborted"
    assert events[-1].partial.content == [TextContent(text="a")]
    await fake.client_disconnected.wait()  # the server saw the socket close
