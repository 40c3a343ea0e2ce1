"""The OpenAI Responses API adapter against the loopback fake and its documented event stream
(tests/fake_responses.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_provider import SSE_HEADERS, Send, Status
from tests.fake_responses import responses_events, whole_response
from treechat.llm.abort import AbortSignal
from treechat.llm.responses import stream_responses
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import Compat, LlmContext, LlmMessage, StreamOptions, ToolSpec
from treechat.storage.model import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from .conftest import model_for


async def run(fp, options=None, signal=None, context=None, **model_kw):
    model = model_for(fp, "openai-responses", **model_kw)
    ctx = context or LlmContext("be brief", [UserMessage(content="hi")])
    opts = options or StreamOptions(api_key="sk-test")
    return [e async for e in stream_responses(model, ctx, opts, signal)]


def signature(block: object) -> dict:
    raw = getattr(block, "thinkingSignature", None)
    assert isinstance(raw, str)
    return json.loads(raw)


async def test_text_stream_with_usage_cost_and_the_request(fake) -> None:
    usage = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 20,
             "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 1020}
    fake.script_responses(["Hel", "lo"], usage=usage)
    events = await run(fake)
    assert [e.type for e in events] == ["start", "text_delta", "text_delta", "done"]
    final = events[-1].partial
    assert final.api == "openai-responses" and final.stop_reason == "stop"
    assert final.content == [TextContent(text="Hello")]
    # input_tokens counts the cached ones, output_tokens the reasoning ones
    assert (final.usage.input, final.usage.output, final.usage.cache_read, final.usage.total_tokens) == (200, 20, 800, 1020)
    assert final.usage.cost.total == pytest.approx((200 * 1 + 20 * 2 + 800 * 0.5) / 1e6)
    req = fake.requests[0]
    assert req.path == "/responses" and req.headers["authorization"] == "Bearer sk-test"
    assert req.body == {"model": "fake-model", "instructions": "be brief", "stream": True, "store": False,
                        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}


async def test_reasoning_summary_is_thinking_and_the_encrypted_item_is_kept(fake) -> None:
    fake.script_responses(["answer"], reasoning=[["Plan", "ning"], ["Then ", "act"]], encrypted="gAAAA-secret")
    events = await run(fake, options=StreamOptions(thinking_level="high"), reasoning=True)
    assert [e.type for e in events] == ["start", *["thinking_delta"] * 4, "text_delta", "done"]
    assert events[3].delta == "\n\nThen "  # a new summary part starts a paragraph
    thinking, text = events[-1].partial.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Planning\n\nThen act"
    assert text == TextContent(text="answer")
    item = signature(thinking)
    assert item["type"] == "reasoning" and item["encrypted_content"] == "gAAAA-secret"
    assert [p["text"] for p in item["summary"]] == ["Planning", "Then act"]
    body = fake.requests[0].body
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}


@pytest.mark.parametrize("level,compat,expected", [
    ("off", Compat(), {}),  # no effort (the model's own) and no summary asked
    ("medium", Compat(), {"effort": "medium", "summary": "auto"}),
    ("xhigh", Compat(), {"effort": "high", "summary": "auto"}),
    ("xhigh", Compat(supports_xhigh=True), {"effort": "xhigh", "summary": "auto"}),
    ("minimal", Compat(supports_minimal=False), {"effort": "low", "summary": "auto"}),
    ("minimal", Compat(), {"effort": "minimal", "summary": "auto"}),
])
async def test_the_thinking_level_is_reasoning_effort(fake, level, compat, expected) -> None:
    fake.script_responses(["ok"])
    await run(fake, options=StreamOptions(thinking_level=level), reasoning=True, compat=compat)
    assert fake.requests[0].body.get("reasoning", {}) == expected


async def test_a_model_that_does_not_think_is_asked_for_no_reasoning(fake) -> None:
    fake.script_responses(["ok"])
    await run(fake, options=StreamOptions(thinking_level="high", max_tokens=500))
    body = fake.requests[0].body
    assert "reasoning" not in body and "include" not in body and body["max_output_tokens"] == 500


async def test_function_calls_stream_their_arguments(fake) -> None:
    fake.script_responses(tool_calls=[{"call_id": "call_A", "name": "read", "arguments": ['{"pa', 'th": "a.txt"}']},
                                      {"call_id": "call_B", "name": "ls", "arguments": []}])
    events = await run(fake)
    assert [e.type for e in events] == ["start", "toolcall_delta", "toolcall_delta", "toolcall_end", "toolcall_end",
                                        "done"]
    final = events[-1].partial
    assert final.stop_reason == "toolUse"
    assert final.content == [ToolCall(id="call_A", name="read", arguments={"path": "a.txt"}),
                             ToolCall(id="call_B", name="ls", arguments={})]


async def test_arguments_that_are_not_json_are_answered_as_such(fake) -> None:
    fake.script_responses(tool_calls=[{"call_id": "c", "name": "read", "arguments": ["{not json"]}])
    call = (await run(fake))[-1].partial.content[0]
    assert isinstance(call, ToolCall) and call.arguments_error and "not valid JSON" in call.arguments_error


async def test_the_history_becomes_input_items(fake) -> None:
    """Reasoning goes back (encrypted, without its id) only to the model that wrote it; tool calls
    and results are paired by call_id (Pi's "call_id|item_id" read too); tool images follow."""
    fake.script_responses(["ok"])
    mine = ThinkingContent.model_validate({"thinking": "t", "thinkingSignature": json.dumps(
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
         "encrypted_content": "ENC"})})
    other = ThinkingContent.model_validate({"thinking": "u", "thinkingSignature": "anthropic-sig"})
    history: list[LlmMessage] = [
        UserMessage(content=[TextContent(text="look"), ImageContent(data="QUJD", mime_type="image/png")]),
        AssistantMessage(api="anthropic-messages", provider="anthropic", model="claude",
                         content=[other, TextContent(text="from claude")]),
        AssistantMessage(api="openai-responses", provider="openai-responses", model="fake-model", stop_reason="toolUse",
                         content=[mine, TextContent(text="reading"),
                                  ToolCall(id="call_1|fc_1", name="read", arguments={"path": "x"})]),
        ToolResultMessage(tool_call_id="call_1|fc_1", tool_name="read",
                          content=[TextContent(text="X"), ImageContent(data="REVG", mime_type="image/png")]),
        AssistantMessage(api="openai-responses", provider="openai-responses", model="another-model",
                         content=[mine, TextContent(text="done")]),
    ]
    tools = [ToolSpec("read", "Read a file", {"type": "object"})]
    await run(fake, context=LlmContext("", history, tools), reasoning=True)
    body = fake.requests[0].body
    assert "instructions" not in body
    assert body["tools"] == [{"type": "function", "name": "read", "description": "Read a file",
                              "parameters": {"type": "object"}, "strict": False}]
    assert body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                     {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "from claude"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}], "encrypted_content": "ENC"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "reading"}]},
        {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"path": "x"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "X"},
        {"role": "user", "content": [{"type": "input_text", "text": "Attached image(s) from tool result:"},
                                     {"type": "input_image", "image_url": "data:image/png;base64,REVG"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]


async def test_response_failed_is_an_error_that_keeps_what_came(fake) -> None:
    fake.script_responses(["partial "], end="failed", usage={"input_tokens": 33},
                          error={"code": "server_error", "message": "The model crashed."})
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and "The model crashed." in (final.error_message or "")
    assert final.content == [TextContent(text="partial ")] and final.usage.input == 33


async def test_an_error_event_ends_the_reply(fake) -> None:
    events = responses_events(["so far"])[:-1]
    events.append(("error", {"type": "error", "code": "context_length_exceeded", "param": None,
                             "message": "Your input exceeds the context window of this model.",
                             "sequence_number": len(events)}))
    fake.script_responses(events=events)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and final.error_kind == "overflow"
    assert "exceeds the context window" in (final.error_message or "")


@pytest.mark.parametrize("reason,stop,error", [("max_output_tokens", "length", None),
                                               ("content_filter", "error", "content filter")])
async def test_response_incomplete_says_its_reason(fake, reason, stop, error) -> None:
    fake.script_responses(["cut sh"], end="incomplete", reason=reason)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == stop and final.content == [TextContent(text="cut sh")]
    assert (error in (final.error_message or "")) if error else final.error_message is None


async def test_refusal_is_shown_as_text(fake) -> None:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    frames: list[tuple[str, dict[str, Any]]] = [("response.output_item.added", {"output_index": 0, "item": item}),
              ("response.refusal.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                          "delta": "I can't help with that."}),
              ("response.completed", {"response": {"status": "completed", "output": []}})]
    fake.script_responses(events=[(k, {"type": k, **d}) for k, d in frames])
    final = (await run(fake))[-1].partial
    assert final.content == [TextContent(text="I can't help with that.")] and final.stop_reason == "stop"


async def test_items_that_come_whole_are_read_from_their_done_event(fake) -> None:
    """A server that sends no deltas (only `response.output_item.done`) still gives the reply."""
    events = [e for e in responses_events(["whole text"], reasoning=[["why"]], encrypted="E",
                                          tool_calls=[{"call_id": "c1", "name": "ls", "arguments": ["{}"]}])
              if not e[0].endswith((".delta", ".added"))]
    fake.script_responses(events=events)
    final = (await run(fake))[-1].partial
    thinking, text, call = final.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "why" and signature(thinking)["encrypted_content"] == "E"
    assert text == TextContent(text="whole text") and call == ToolCall(id="c1", name="ls")


async def test_a_stream_with_no_data_is_asked_again_without_streaming(fake) -> None:
    fake.enqueue([Status(200, SSE_HEADERS, "close")])  # headers, then the stream just ends
    fake.script_json(whole_response(responses_events(["unstreamed"], usage={"input_tokens": 7})))
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "stop" and final.content == [TextContent(text="unstreamed")] and final.usage.input == 7
    assert fake.requests[1].body["stream"] is False and fake.requests[1].body["input"] == fake.requests[0].body["input"]


async def test_no_end_event_is_an_error(fake) -> None:
    fake.script_responses(["all of it"], terminal=False)
    final = (await run(fake))[-1].partial
    assert final.stop_reason == "error" and final.content == [TextContent(text="all of it")]


async def test_a_chunk_that_is_not_json_is_one_sentence(fake) -> None:
    fake.enqueue([Status(200, SSE_HEADERS), Send(b"data: {not json\n\n")])
    final = (await run(fake, options=StreamOptions(retry=RetryPolicy(max_retries=0))))[-1].partial
    assert final.stop_reason == "error" and "sent a malformed chunk" in (final.error_message or "")


async def test_a_delta_of_the_wrong_kind_is_one_sentence(fake) -> None:
    events = responses_events(["ok"])
    kind, data = events[4]
    assert kind == "response.output_text.delta"
    events[4] = (kind, {**data, "delta": 5})
    fake.script_responses(events=events)
    final = (await run(fake))[-1].partial
    assert final.error_message == "openai-responses sent a malformed chunk (a delta is int 5, not text); the reply is incomplete."


async def test_abort_mid_stream_closes_the_request_and_keeps_the_partial_reply(fake) -> None:
    fake.script_responses(["one ", "two"], hang_after=5)  # silent after the first text delta
    signal = AbortSignal()
    events = []
    async for event in stream_responses(model_for(fake, "openai-responses"), LlmContext("", [UserMessage(content="hi")]),
                                        StreamOptions(), signal):
        events.append(event)
        if event.type == "text_delta":
            signal.abort()
    final = events[-1].partial
    assert final.stop_reason == "aborted" and final.content == [TextContent(text="one ")]
    await fake.client_disconnected.wait()  # the server saw the socket close
