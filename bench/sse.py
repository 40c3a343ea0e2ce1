"""SSE decoding benchmark: one huge event fed in small chunks, and the same through the whole stack.

    python bench/sse.py [--sizes 1,4,10] [--chunk 4096] [--no-e2e]

`sse_decode`: `SSEDecoder.feed` over one `data:` event of N MB, in `--chunk`-byte pieces (what a
socket read hands us), then `close()`. `sse_e2e`: the same event as one OpenAI text delta served by the
loopback fake provider and read through `stream_openai` (HTTP, decoding, JSON, the parser).
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
        async for event in stream_openai(model, context, StreamOptions(), None):
            final = event
        seconds = time.perf_counter() - start
    assert final is not None and final.type == "done", final
    assert len(final.partial.content[0].text) == length
    return {"bench": "sse_e2e", "event_mb": mb, "seconds": round(seconds, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,10", help="event sizes in MB, comma separated")
    parser.add_argument("--chunk", type=int, default=4096, help="bytes per feed() call")
    parser.add_argument("--no-e2e", action="store_true", help="only the decoder, not the HTTP stack")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    for mb in sizes:
        print(json.dumps(bench_decode(mb, args.chunk)), flush=True)
    if not args.no_e2e:
        for mb in sizes:
            print(json.dumps(asyncio.run(bench_e2e(mb))), flush=True)


if __name__ == "__main__":
    main()
