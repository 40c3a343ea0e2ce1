"""tui.keystroke_idle / tui.keystroke: keys typed into the composer, with nothing streaming and
while a reply streams from a fake provider in a child process; run through `bench/tui.py --only
keystroke` (the child is `bench/tui.py --serve-fake`)."""

from __future__ import annotations

import asyncio
import bisect
import random
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.child_server import ServerChild
from bench.tui_common import (
    ROOT,
    SIZE,
    WORDS,
    Frames,
    GcWatch,
    TextContent,
    branch_entries,
    count_messages,
    emit,
    import_session,
    judged,
    load1,
    ms,
    open_app,
    profiled,
    region_text,
    spread,
    usable,
)

# ------------------------------------------------------------------ 4. keystrokes while streaming

class FakeServer(ServerChild):
    """tests.fake_provider.FakeProvider in a child process (bench/child_server.py). It serves
    `replies` scripted replies (at once when asked at once: bench/tui_streams.py): `tokens`
    one-token chunks with `gap` seconds between them, then reports how long the sending took."""

    def __init__(self, tokens: int, gap: float, seed: int, replies: int = 1) -> None:
        super().__init__([sys.executable, str(ROOT / "bench/tui.py"), "--serve-fake",
                          f"{tokens},{gap},{seed},{replies}"], str(ROOT), "the fake provider process")

    def sent(self) -> dict:
        """{"tokens", "seconds"} of the finished (or cut) reply; stops the server."""
        return self.finish()


async def serve_fake(spec: str) -> None:
    """Child-process side of FakeServer: print the base URL, serve, print what was sent when stdin closes."""
    import json

    from tests.fake_provider import FakeProvider, Sleep

    count, gap, seed, replies = spec.split(",")
    marks: list[float] = []

    class Noted(Sleep):  # the server reads `seconds` once, right after writing a token's frame
        @property
        def seconds(self) -> float:
            marks.append(time.perf_counter())
            return self._seconds

        @seconds.setter
        def seconds(self, value: float) -> None:
            self._seconds = value

    steps = sse_steps(stream_tokens(int(count), random.Random(int(seed))), float(gap))
    steps = [Noted(s.seconds) if isinstance(s, Sleep) else s for s in steps]
    async with FakeProvider() as fp:
        for _ in range(int(replies)):
            fp.enqueue(steps)
        print(fp.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(json.dumps({"tokens": len(marks), "seconds": (marks[-1] - marks[0]) if marks else 0}), flush=True)


def stream_tokens(n: int, rng: random.Random) -> list[str]:
    """One-token chunks of a markdown answer: words, paragraph breaks, a code block now and then."""
    out: list[str] = []
    while len(out) < n:
        out += [rng.choice(WORDS) + " " for _ in range(rng.randint(20, 60))] + [".\n\n"]
        if rng.random() < 0.3:
            out += ["```python\n"] + [rng.choice(WORDS) + ("\n" if rng.random() < 0.15 else " ") for _ in range(rng.randint(20, 60))] + ["\n```\n\n"]
    return out[:n]


def sse_steps(tokens: list[str], gap: float) -> list:
    from tests.fake_provider import SSE_HEADERS, Send, Sleep, Status, openai_chunks, sse_frame

    steps: list = [Status(200, SSE_HEADERS, "chunked")]
    for chunk in openai_chunks(tokens):
        steps += [Send(sse_frame(chunk)), Sleep(gap)]
    return steps


async def type_keys(app: Any, frames: Frames, n: int, rng: random.Random) -> list[float]:
    from textual import events

    from treechat.widgets.composer.view import Composer
    from treechat.widgets.textual_internals import send_from_terminal

    composer = app.ui(Composer)
    composer.focus()
    latencies = []
    for i in range(n):
        ch = "abcdefghijklmnopqrstuvwxyz"[i % 26]
        want = composer.text + ch
        tail = want[-8:]
        shown = frames.wait_for(partial(lambda want, tail: composer.text == want
                                        and tail in region_text(app, composer.content_region, sep=""), want, tail))
        key = events.Key(ch, ch)
        key.set_sender(app)
        t0 = time.perf_counter()
        send_from_terminal(app, key)  # what the terminal driver's input thread does with a key
        latencies.append(ms(await asyncio.wait_for(shown, 5) - t0))
        await asyncio.sleep(rng.uniform(0.02, 0.06))  # a fast typist: ~25 keys/s
    return latencies



async def bench_keystroke(keys: int, history: int, rate: float, work: Path) -> None:
    from treechat.widgets.composer.view import Composer
    from treechat.widgets.transcript.view import Transcript

    rng = random.Random(3)
    home = work / "keys"
    home.mkdir()
    entries, leaf = branch_entries(history, seed=21)
    await import_session(home, "bench-keys", entries, leaf)
    tokens = stream_tokens(int(rate * (keys * 0.12 + 8)), rng)  # enough to outlast the typing
    ends = [0]
    for t in tokens:
        ends.append(ends[-1] + len(t))
    # Sleep(1/rate) overshoots by ~0.4 ms per token (asyncio timer + write): 0.9/rate gives ~200/s
    with FakeServer(len(tokens), 0.9 / rate, seed=3) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-bench"}
        app, catalog = await open_app(home, "bench-keys", env, model_ref="openai/fake-model")
        frames = Frames(app)
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.wait_for(frames.wait_for(usable(app)), 30)
            idle = await type_keys(app, frames, min(keys, 40), rng)
            emit(bench="tui.keystroke_idle", **spread(idle), history_messages=count_messages(entries), load1=load1(),
                 what="same as tui.keystroke with nothing streaming (the floor: frame timer + key handling)")
            composer = app.ui(Composer)
            composer.load_text("Write a long answer, please.")
            await pilot.press("enter")
            transcript = app.ui(Transcript)

            def streamed() -> int:
                msg = transcript._stream_latest
                return len("".join(b.text for b in getattr(msg, "content", []) or [] if isinstance(b, TextContent)))

            # ~1 s in: the stream is in full swing (a bench watches the screen as a frame would; no event says it)
            while streamed() < ends[min(len(ends) - 1, int(rate))]:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            composer.focus()
            c0, f0, t0 = streamed(), frames.count, time.perf_counter()
            with profiled("keystroke_streaming"), GcWatch() as gcw:
                lat = await type_keys(app, frames, keys, rng)
            c1, f1, t1 = streamed(), frames.count, time.perf_counter()
            still = composer.running
            sent = fake.sent()
            got = bisect.bisect_right(ends, c1) - bisect.bisect_right(ends, c0)
            stats = spread(lat)
            judged("tui.keystroke", stats["p95_ms"], **stats, metric="p95", **gcw.summary(),
                   vs_idle_p95=round(stats["p95_ms"] / max(spread(idle)["p95_ms"], 0.1), 2), tokens_per_s=round(got / (t1 - t0), 1),
                   server_tokens_per_s=round(sent["tokens"] / sent["seconds"], 1) if sent.get("seconds") else None,
                   target_tokens_per_s=rate, fps=round((f1 - f0) / (t1 - t0), 1), streaming_throughout=still,
                   history_messages=count_messages(entries), load1=load1(),
                   what="key posted as the driver does -> first frame whose composer cells show it, while streaming; "
                        "tokens_per_s = what reached the App's message snapshot during the typing")
            await pilot.press("escape")
        await catalog.close()

