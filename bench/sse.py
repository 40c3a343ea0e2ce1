"""SSE decoding benchmark: one huge event fed in small chunks, and the same through the whole stack.

    python bench/sse.py [--sizes 1,4,10] [--chunk 4096] [--no-e2e] [--reply-sizes 2,13]

`sse_decode`: `SSEDecoder.feed` over one `data:` event of N MB, in `--chunk`-byte pieces (what a
socket read hands us), then `close()`. `sse_e2e`: the same event as one OpenAI text delta served by the
loopback fake provider and read through `stream_openai` (HTTP, decoding, JSON, the parser).
`sse_reply`: a reply of N MB in ~120-character deltas (one event each, as servers stream tokens)
through `stream_openai`, every event consumed as the agent loop does; seconds and peak RSS.
Prints one JSON object per line; compare runs on the same machine (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.narrow import first_text
from treechat.llm.sse import SSEDecoder  # noqa: E402


def _event(mb: float) -> tuple[bytes, int]:
    """A Chat Completions chunk whose text is `mb` MB of plain ASCII (JSON-safe, no escapes)."""
    size = int(mb * 1024 * 1024)
    text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk)}\n\n".encode(), len(text)


def bench_decode(mb: float, chunk: int) -> dict[str, object]:
    wire, _ = _event(mb)
    decoder = SSEDecoder()
    start = time.perf_counter()
    events = []
    for i in range(0, len(wire), chunk):
        events.extend(decoder.feed(wire[i : i + chunk]))
    events.extend(decoder.close())
    seconds = time.perf_counter() - start
    assert len(events) == 1 and len(events[0].data) == len(wire) - len("data: \n\n")
    return {"bench": "sse_decode", "event_mb": mb, "chunk_bytes": chunk, "seconds": round(seconds, 4),
            "mb_per_s": round(mb / seconds, 1) if seconds else None}


async def bench_e2e(mb: float) -> dict[str, object]:
    from tests.fake_provider import SSE_HEADERS, FakeProvider, Send, Status, sse_frame
    from treechat.llm.openai import stream_openai
    from treechat.llm.types import LlmContext, ModelInfo, StreamOptions
    from treechat.storage.model import UserMessage

    wire, length = _event(mb)
    async with FakeProvider() as fp:
        # 16 KB writes: the client sees many small reads, as from a real socket
        steps: list[object] = [Status(200, SSE_HEADERS)]
        steps += [Send(wire[i : i + 16384]) for i in range(0, len(wire), 16384)]
        steps += [Send(sse_frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                  Send(sse_frame("[DONE]"))]
        fp.enqueue(steps)
        model = ModelInfo(id="fake", provider="fake", api="openai", base_url=fp.base_url)
        context = LlmContext("", [UserMessage(content="hi")])
        start = time.perf_counter()
        final = None
        async for event in stream_openai(model, context, StreamOptions(max_reply_bytes=1 << 40), None):
            final = event
        seconds = time.perf_counter() - start
    assert final is not None and final.type == "done", final
    assert len(first_text(final.partial)) == length
    return {"bench": "sse_e2e", "event_mb": mb, "seconds": round(seconds, 4)}


async def bench_reply(mb: float) -> dict[str, object]:
    import resource

    from tests.fake_provider import SSE_HEADERS, FakeProvider, Send, Status, openai_chunks, sse_frame
    from treechat.llm.openai import stream_openai
    from treechat.llm.types import LlmContext, ModelInfo, StreamOptions
    from treechat.storage.model import UserMessage

    piece = "lorem ipsum dolor sit amet consectetur " * 3
    count = int(mb * 1e6 / len(piece))
    wire = b"".join(sse_frame(c) for c in openai_chunks([piece] * count))
    async with FakeProvider() as fp:
        fp.enqueue([Status(200, SSE_HEADERS), *[Send(wire[i : i + 65536]) for i in range(0, len(wire), 65536)]])
        model = ModelInfo(id="fake", provider="fake", api="openai", base_url=fp.base_url)
        start = time.perf_counter()
        final, events = None, 0
        options = StreamOptions(max_reply_bytes=1 << 40)  # (max_reply_mb would stop it at 4 MB)
        async for event in stream_openai(model, LlmContext("", [UserMessage(content="hi")]), options, None):
            final, events = event, events + 1
        seconds = time.perf_counter() - start
    assert final is not None and final.type == "done" and len(first_text(final.partial)) == count * len(piece)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"bench": "sse_reply", "reply_mb": mb, "deltas": count, "events": events, "seconds": round(seconds, 3),
            "peak_rss_mb": round(peak)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,10", help="event sizes in MB, comma separated")
    parser.add_argument("--chunk", type=int, default=4096, help="bytes per feed() call")
    parser.add_argument("--no-e2e", action="store_true", help="only the decoder, not the HTTP stack")
    parser.add_argument("--reply-sizes", default="2,13", help="sse_reply sizes in MB (ascending: RSS is a peak)")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    for mb in sizes:
        print(json.dumps(bench_decode(mb, args.chunk)), flush=True)
    if not args.no_e2e:
        for mb in sizes:
            print(json.dumps(asyncio.run(bench_e2e(mb))), flush=True)
        for mb in [float(s) for s in args.reply_sizes.split(",") if s.strip()]:
            print(json.dumps(asyncio.run(bench_reply(mb))), flush=True)


if __name__ == "__main__":
    main()
