"""The Anthropic Messages adapter against the loopback fake server."""

from __future__ import annotations

import pytest

from treechat.llm.anthropic import stream_anthropic
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


async def run(fp, options=None, context=None, **model_kw):
    model = model_for(fp, "anthropic", **model_kw)
    ctx = context or LlmContext("sys", [UserMessage(content="hi")])
    return [e async for e in stream_anthropic(model, ctx, options or StreamOptions(api_key="ak-test"), None)]


async def test_thinking_text_usage_and_cost(fake) -> None:
    fake.script_anthropic(["Hel", "lo"], thinking=["hmm"], usage={"input_tokens": 100, "output_tokens": 50,
                          "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 10})
    events = await run(fake)
    assert [e.type for e in events] == ["start", "thinking_delta", "text_delta", "text_delta", "done"]
    final = events[-1].partial
    assert final.api == "anthropic-messages" and final.stop_reason == "stop"
    assert final.content[1] == TextContent(text="Hello")
    thinking = final.content[0]
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "hmm"
    assert getattr(thinking, "thinkingSignature", None) == "sig-1"  # an extra field, kept as Pi keeps it
    u = final.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (100, 50, 1000, 10, 1160)
    assert u.cost.total == pytest.approx((100 * 1 + 50 * 2 + 1000 * 0.5 + 10 * 4) / 1e6)
    req = fake.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ak-test" and req.headers["anthropic-version"] == "2023-06-01"
    assert req.body["system"] == "sys" and req.body["max_tokens"] > 0


async def test_tool_use_with_fragments_and_empty_input(fake) -> None:
    fake.script_anthropic(tool_calls=[
        {"id": "toolu_1", "name": "read", "arguments": ["{\"path\":", "", " \"a.txt\"}"]},
        {"id": "toolu_2", "name": "ls", "arguments": []},
    ])
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "toolUse"
    assert final.content == [ToolCall(id="toolu_1", name="read", arguments={"path": "a.txt"}),
                             ToolCall(id="toolu_2", name="ls", arguments={})]


@pytest.mark.parametrize("stop,expected", [("max_tokens", "length"), ("pause_turn", "stop"), ("refusal", "error"),
                                           ("model_context_window_exceeded", "length"), ("brand_new", "stop")])
async def test_stop_reasons(fake, stop, expected) -> None:
    fake.script_anthropic(["x"], stop=stop)
    assert (await run(fake))[-1].partial.stop_reason == expected


async def test_request_groups_tool_results_and_replays_signed_thinking(fake) -> None:
    fake.script_anthropic(["ok"])
    history: list[LlmMessage] = [
        UserMessage(content="go"),
        AssistantMessage(content=[ThinkingContent.model_validate({"thinking": "t", "thinkingSignature": "S"}),
                                  ThinkingContent(thinking="unsigned"),
                                  ToolCall(id="a", name="read", arguments={"path": "x"}), ToolCall(id="b", name="ls")],
                         stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="a", tool_name="read", content=[TextContent(text="X")]),
    ]
    tools = [ToolSpec("read", "Read", {"type": "object"})]
    await run(fake, context=LlmContext("", history, tools), options=StreamOptions(thinking_level="medium"), reasoning=True, max_tokens=64000)
    body = fake.requests[0].body
    assert body["messages"][1]["content"][:2] == [{"type": "thinking", "thinking": "t", "signature": "S"},
                                                   {"type": "text", "text": "unsigned"}]
    results = body["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == ["a", "b"]  # b got a synthetic "No result provided"
    assert results[1]["is_error"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 32000 + 8192
    assert body["tools"] == [{"name": "read", "description": "Read", "input_schema": {"type": "object"}}]


async def test_another_protocol_s_signed_thinking_is_replayed_as_text(fake) -> None:
    """A reply of OpenAI's Responses API keeps its reasoning item where Anthropic keeps its
    signature: after a switch of model it must not go to Anthropic as a signature."""
    fake.script_anthropic(["ok"])
    item = ThinkingContent.model_validate({"thinking": "summary", "thinkingSignature": '{"type":"reasoning"}'})
    history: list[LlmMessage] = [UserMessage(content="go"),
                                 AssistantMessage(api="openai-responses", content=[item, TextContent(text="done")]),
                                 UserMessage(content="next")]
    await run(fake, context=LlmContext("", history))
    assert fake.requests[0].body["messages"][1]["content"] == [{"type": "text", "text": "summary"},
                                                               {"type": "text", "text": "done"}]


async def test_error_event_after_200(fake) -> None:
    events = [("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
              ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]
    fake.script_anthropic(events=events)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and "Overloaded" in final.error_message
    assert final.usage.input == 3  # input counts survive a failed stream


async def test_dropped_connection_keeps_partial(fake) -> None:
    fake.script_anthropic(["one ", "two ", "three"], drop_after=5)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error"
    assert final.content == [TextContent(text="one two ")]


async def test_no_message_stop_is_an_error(fake) -> None:
    fake.script_anthropic(["all of it"], terminal=False)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and final.content == [TextContent(text="all of it")]
