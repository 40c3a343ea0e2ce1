"""Issue 21 item 8: no internal text reaches a user. A timestamp of 1e308 rejected a whole import
with "OverflowError: timestamp out of range for platform time_t"; a chunk with "content": 5 ended
a reply with "can only concatenate str (not "int") to str". Now the import goes through (the
entry's own time stands in) and a malformed chunk is one sentence naming the field."""

from __future__ import annotations

import json

import pytest

from tests.fake_provider import SSE_HEADERS, FakeProvider, Send, Status, openai_chunks, sse_frame
from treechat.cli.main import main
from treechat.llm.registry import adapter
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import Api, LlmContext, ModelInfo, StreamOptions
from treechat.storage.model import TextContent, UserMessage


@pytest.mark.parametrize("storage", ["sqlite", "jsonl"])
def test_a_timestamp_no_date_can_hold_does_not_fail_the_import(tmp_path, capsys, storage):
    session = tmp_path / "big.jsonl"
    session.write_text("\n".join(json.dumps(line) for line in [
        {"type": "session", "version": 3, "id": "ts-big", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1e308}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2025-01-01T00:00:02Z",
         "message": {"role": "user", "content": "again", "timestamp": -1e308}},
    ]) + "\n")
    home = ["--home", str(tmp_path / "home"), "--storage", storage]
    assert main([*home, "import", str(session)]) == 0
    out, err = capsys.readouterr()
    assert out == "ts-big\n" and "imported 1 session (2 entries)" in err and "Error" not in err
    assert main([*home, "sessions"]) == 0
    listed = capsys.readouterr().out
    assert "ts-big" in listed and "2025-01-01 00:00" in listed


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def stream(fake: FakeProvider, api: Api = "openai"):
    model = ModelInfo(id="fake-model", provider=api, api=api, base_url=fake.base_url)
    fn = adapter(api)
    options = StreamOptions(api_key="sk-test", retry=RetryPolicy(max_retries=0))
    last = None
    async for event in fn(model, LlmContext("", [UserMessage(content="hi")]), options, None):
        last = event
    assert last is not None
    return last.partial


def openai_chunk(delta: object) -> bytes:
    return sse_frame({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


@pytest.mark.parametrize("delta,said", [
    ({"content": 5}, "content is int 5, not text"),
    ({"reasoning_content": ["a"]}, "reasoning_content is list ['a'], not text"),
    ({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read", "arguments": 5}}]},
     "a tool's arguments is int 5, not text"),
    ({"tool_calls": [7]}, "a tool call is int 7, not text"),
    ("not a delta", "a delta is str 'not a delta', not text"),
])
async def test_an_openai_chunk_of_the_wrong_shape_is_one_sentence(fake, delta, said):
    fake.enqueue([Status(200, SSE_HEADERS), Send(openai_chunk({"content": "so far"})), Send(openai_chunk(delta))])
    final = await stream(fake)
    assert final.stop_reason == "error"
    assert final.error_message == f"openai sent a malformed chunk ({said}); the reply is incomplete."
    assert final.content[0] == TextContent(text="so far")


async def test_an_anthropic_delta_of_the_wrong_shape_is_one_sentence(fake):
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                 "usage": {"input_tokens": "many", "output_tokens": None}}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}
    fake.enqueue([Status(200, SSE_HEADERS), Send(sse_frame(start, "message_start")),
                  Send(sse_frame(block, "content_block_start")), Send(sse_frame(delta, "content_block_delta"))])
    final = await stream(fake, "anthropic")
    assert final.stop_reason == "error"
    assert final.error_message == "anthropic sent a malformed chunk (text is int 5, not text); the reply is incomplete."


async def test_content_as_a_list_of_text_parts_is_read(fake):
    fake.enqueue([Status(200, SSE_HEADERS), Send(openai_chunk({"content": [{"type": "text", "text": "parts "},
                                                                         {"type": "text", "text": "joined"}]})),
                  Send(sse_frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))])
    final = await stream(fake)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="parts joined")]


async def test_token_counts_of_the_wrong_kind_are_left_out(fake):
    chunks = openai_chunks(["fine"])
    chunks.insert(-1, {"choices": [], "usage": {"prompt_tokens": "lots", "completion_tokens": [1]}})
    fake.script_openai(chunks=chunks)
    final = await stream(fake)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="fine")]
