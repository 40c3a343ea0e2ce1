"""Issue 21 item 2: nothing a server sends can take the machine. An error body that never ends (or
trickles), an SSE line with no end, a sniffed body of whitespace, an endless stream of valid
tokens and a reply that trickles forever are each cut at a bound, and the reply says which bound
and the config.toml key that raises it. Long replies are handled in linear time: one snapshot per
network read, not one per delta."""

from __future__ import annotations

import asyncio

import pytest

import treechat.llm.http_stream as http_stream
from tests.fake_provider import SSE_HEADERS, Drip, FakeProvider, Send, Status, openai_chunks, sse_frame
from tests.narrow import assistant_of, first_text
from tests.print_helper import print_run
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry, adapter
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import Api, LlmContext, ModelInfo, StreamOptions
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import TextContent, UserMessage

ENDLESS = 64 * 1024 * 1024  # what the fake would send before giving up: far past every bound here
TOKEN = sse_frame(openai_chunks(["token "])[0])


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def left_early(fake: FakeProvider) -> bool:
    """Once the server has seen the client go: did it go before the server's endless body ended?"""
    await asyncio.wait_for(fake.client_disconnected.wait(), 20)
    return fake.left_early


async def stream(fake: FakeProvider, api: Api = "openai", events: list | None = None, **opts):
    model = ModelInfo(id="fake-model", provider=api, api=api, base_url=fake.base_url)
    fn = adapter(api)
    options = StreamOptions(api_key="sk-test", retry=RetryPolicy(max_retries=0), **opts)
    last = None
    async for event in fn(model, LlmContext("", [UserMessage(content="hi")]), options, None):
        if events is not None:
            events.append(event)
        last = event
    assert last is not None
    return last.partial


async def test_a_400_whose_body_never_ends_is_read_only_up_to_its_bound(fake) -> None:
    fake.enqueue([Status(400, {"Content-Type": "application/json"}),
                  Drip(b'{"error": {"message": "bad request ' + b"x" * 65536, every=0, max_bytes=ENDLESS)])
    final = await stream(fake)
    assert final.stop_reason == "error" and "bad request" in final.error_message
    assert await left_early(fake) and fake.dripped < 8 * 1024 * 1024, fake.dripped  # not 64 MB, nor 23 GB


async def test_a_400_body_that_trickles_is_cut_after_a_few_seconds(fake, monkeypatch) -> None:
    monkeypatch.setattr(http_stream, "ERROR_BODY_SECONDS", 0.3)
    fake.enqueue([Status(400, {"Content-Type": "application/json"}), Send(b'{"error": {"message": "slow '),
                  Drip(b"x", every=0.05, limit=20)])
    final = await stream(fake, first_byte_timeout=30)
    assert final.stop_reason == "error" and "slow" in final.error_message
    assert await left_early(fake)


async def test_an_sse_line_that_never_ends_is_stopped_at_the_reply_bound(fake) -> None:
    fake.enqueue([Status(200, SSE_HEADERS), Send(b'data: {"choices": [{"delta": {"content": "'),
                  Drip(b"x" * 65536, every=0, max_bytes=ENDLESS)])
    final = await stream(fake, max_reply_bytes=1_000_000)
    assert final.stop_reason == "error" and final.error_kind == "limit"
    assert "one event of over 1 MB" in final.error_message and "raise max_reply_mb in config.toml" in final.error_message
    assert await left_early(fake) and fake.dripped < 8 * 1024 * 1024


async def test_a_body_of_whitespace_is_not_sniffed_forever(fake) -> None:
    fake.enqueue([Status(200, {"Content-Type": "text/plain"}), Drip(b" " * 65536, every=0, max_bytes=ENDLESS)])
    final = await stream(fake)
    assert final.stop_reason == "error" and "not an event stream" in final.error_message
    assert await left_early(fake) and fake.dripped < 8 * 1024 * 1024


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_an_endless_stream_of_tokens_stops_at_max_reply_and_keeps_the_text(fake, api) -> None:
    if api == "openai":
        head, token = b"", TOKEN
    elif api == "openai-responses":
        item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
        head = sse_frame({"type": "response.output_item.added", "output_index": 0, "item": item},
                         "response.output_item.added")
        token = sse_frame({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                           "content_index": 0, "delta": "token "}, "response.output_text.delta")
    else:
        start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                     "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        head = sse_frame(start, "message_start") + sse_frame(block, "content_block_start")
        token = sse_frame({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": "token "}}, "content_block_delta")
    fake.enqueue([Status(200, SSE_HEADERS), *([Send(head)] if head else []),
                  Drip(token * 1000, every=0, max_bytes=ENDLESS)])
    final = await stream(fake, api, max_reply_bytes=200_000)
    assert final.stop_reason == "error" and final.error_kind == "limit"
    assert final.error_message == (f"The reply from {api} passed 0.2 MB and was stopped there (what arrived is kept); "
                                   "raise max_reply_mb in config.toml if a reply really needs more.")
    text = final.content[0].text
    assert 200_000 < len(text) < 1_000_000 and text.startswith("token token")
    assert await left_early(fake)


async def test_a_reply_that_trickles_forever_stops_at_reply_timeout(fake) -> None:
    fake.enqueue([Status(200, SSE_HEADERS), Drip(TOKEN, every=0.05, limit=20)])
    final = await stream(fake, reply_timeout=0.5, idle_timeout=5)
    assert final.stop_reason == "error" and final.error_kind == "timeout"
    assert "was still going after 0.5 s" in final.error_message and "raise reply_timeout" in final.error_message
    assert final.content[0].text.startswith("token ")
    assert await left_early(fake)


async def test_deltas_of_one_read_reach_listeners_as_one_event(fake) -> None:
    """What keeps a long reply linear: a read's deltas share one snapshot (before, each delta made
    its own copy of the whole reply so far, and a 13 MB reply took 200 s and 2.8 GB)."""
    pieces = [f"{i:05d} " for i in range(20_000)]
    body = b"".join(sse_frame(c) for c in openai_chunks(pieces))  # ~2.6 MB, in as few reads as the socket gives
    fake.enqueue([Status(200, SSE_HEADERS), Send(body)])
    events: list = []
    final = await stream(fake, events=events)
    deltas = [e for e in events if e.type == "text_delta"]
    assert final.stop_reason == "stop" and final.content == [TextContent(text="".join(pieces))]
    assert "".join(e.delta for e in deltas) == "".join(pieces)
    assert len(deltas) < len(pieces) / 10, len(deltas)
    assert deltas[-1].partial.content[0].text.endswith(deltas[-1].delta)  # the snapshot holds its own delta


async def test_print_mode_says_which_limit_and_how_to_raise_it(fake, tmp_path) -> None:
    (tmp_path / "config.toml").write_text("max_reply_mb = 0.1\n")
    fake.enqueue([Status(200, SSE_HEADERS), Drip(TOKEN * 1000, every=0, max_bytes=ENDLESS)])
    session = await Session.open(await MemoryCatalog().create())
    registry = ModelRegistry(env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"})
    code, out, err, session = await print_run("hi", session, model_ref="openai/fake-model", registry=registry,
                                              settings=load_settings(tmp_path, env={}))
    assert code == 1 and "passed 0.1 MB" in err and "raise max_reply_mb in config.toml" in err
    assert out.startswith("token token")
    stored = (await session.build_session_context()).messages[-1]
    assert assistant_of(stored).stop_reason == "error" and len(first_text(stored)) > 100_000
    assert assistant_of(stored).error_kind == "limit"  # kept with the reply


# ---------------------------------------------------------------- issue 36: compressed bodies
# httpx decompressed a gzip body one network read at a time, and 64 KB of gzip can be 64 MB: every
# byte bound (an event, a reply, an error body) now sees decompressed bytes, in pieces of 64 KB.


def gzipped(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, 9)


async def test_a_gzip_compressed_reply_is_read(fake) -> None:
    frames = b"".join(sse_frame(c) for c in openai_chunks(["compressed ", "reply"])) + b"data: [DONE]\n\n"
    fake.enqueue([Status(200, {**SSE_HEADERS, "Content-Encoding": "gzip"}), Send(gzipped(frames))])
    final = await stream(fake)
    assert final.stop_reason != "error", final.error_message
    assert first_text(final) == "compressed reply"
    assert fake.requests[0].headers.get("accept-encoding") == "gzip, deflate"  # only what is read is asked for


@pytest.mark.slow  # tens of MB decompressed
async def test_a_gzip_bomb_stops_at_the_event_bound_in_decompressed_bytes(fake) -> None:
    bomb = gzipped(b'data: {"choices": [{"delta": {"content": "' + b"x" * (200 << 20))  # 200 MB in ~200 KB
    fake.enqueue([Status(200, {**SSE_HEADERS, "Content-Encoding": "gzip"}), Send(bomb)])
    final = await stream(fake, max_reply_bytes=1_000_000)
    assert final.stop_reason == "error" and "one event of over 1 MB" in final.error_message


async def test_a_body_in_an_encoding_not_asked_for_is_one_error(fake) -> None:
    fake.enqueue([Status(200, {**SSE_HEADERS, "Content-Encoding": "br"}), Send(b"\x1b\x00\x00")])
    final = await stream(fake)
    assert final.stop_reason == "error"
    assert final.error_message == ("openai sent a reply treechat cannot read: the answer is encoded as br, which "
                                   "treechat does not read (it asks for gzip, deflate).")


async def test_decompression_hands_on_bounded_pieces() -> None:
    from treechat.llm.content_encoding import PIECE, decoded

    async def network():  # one read of the wire: 50 KB that stand for 50 MB
        yield gzipped(b"\0" * (50 << 20))

    sizes = []
    async for piece in decoded(network(), ["gzip"]):
        sizes.append(len(piece))
        if sum(sizes) > 2 * PIECE:
            break
    assert max(sizes) <= PIECE  # httpx handed on the 50 MB at once


async def test_tool_arguments_nested_thousands_deep_are_an_error_for_the_model(fake) -> None:
    """A model's (or a server's) JSON goes through bounded_json: nesting past 64 is invalid
    arguments the model is told about, not a RecursionError that ended the reply."""
    from treechat.storage.model import ToolCall

    deep = '{"path": ' + "[" * 50_000 + "]" * 50_000 + "}"
    fake.script_openai(tool_calls=[{"id": "c1", "name": "read", "arguments": deep}])
    final = await stream(fake)
    assert final.stop_reason == "toolUse", final.error_message
    call = next(block for block in final.content if isinstance(block, ToolCall))
    assert call.arguments_error is not None and "were not valid JSON" in call.arguments_error
