"""Keys and frames with several replies streaming at once (issue 39), one JSON object per line.

    .venv/bin/python bench/tui_streams.py [--streams 1,4,8] [--keys 60] [--rate 100] [--quick]

Each count of streams is measured in a fresh process (a heap grown by 8 runs must not lengthen the
next count's GC pauses). In each: a 200-message SQLite branch open in the App at 140x44, a loopback
fake provider in its own process (bench/tui_keys.FakeServer) serving N replies at once, each ~RATE
one-token chunks a second. The N runs start from the same entry (siblings; the person moves back to
it before each send, as a person would in the tree) and the person stays on the last one's branch:
its reply is drawn in the transcript, the others stream off screen with their rows marked in the tree.
Then KEYS keys are posted to the App the way the terminal driver posts them, each timed from the post
to the first frame whose composer cells show it (bench/tui_keys.type_keys).

- `tui.streams_idle`: the same keys with nothing streaming (the floor), in the same process;
- `tui.streams`: per N, p50/p95/max ms of the keys, `vs_idle_p95` (issue 39: <= 2 with 4 streams),
  frames a second, tokens a second the server sent (all runs together), the process's resident
  memory before the runs and at its peak during the typing, and that growth per run (issue 39:
  memory linear in runs: the per-run figure stays put as N grows).

With only one run possible (the code before issue 39), `--streams 1` measures the one stream.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/ (whose storage.py would shadow the storage package)

from bench.tui_common import (  # noqa: E402
    PROFILE,
    SIZE,
    Frames,
    GcWatch,
    branch_entries,
    count_messages,
    emit,
    import_session,
    load1,
    machine,
    open_app,
    profiled,
    spread,
    usable,
)
from bench.tui_keys import FakeServer, stream_tokens, type_keys  # noqa: E402


def rss_mb() -> float:
    """The process's resident memory now (VmRSS), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def streamed_chars(app: Any) -> list[int]:
    """How much each going run's reply has said so far (its agent's partial message)."""
    from treechat.storage.model import AssistantMessage, message_text

    runs = getattr(app.chat.s, "runs", None)
    agents = [r.agent for r in runs.values()] if runs is not None else [app.chat.agent]  # (before issue 39: one)
    out = []
    for agent in agents:
        partial = agent.state.streaming_message if agent is not None else None
        out.append(len(message_text(partial)) if isinstance(partial, AssistantMessage) else 0)
    return out


async def start_runs(app: Any, n: int) -> None:
    base = app.chat.leaf_id
    for i in range(n):
        if i:
            await app.chat.move_to(base)  # a real move while the others run (issue 39)
        await app.chat.send(f"Write a long answer, please ({i + 1} of {n}).")


async def measure(streams: int, keys: int, rate: float, work: Path) -> None:
    rng = random.Random(7)
    home = work / "streams"
    home.mkdir()
    if streams > 1:
        (home / "config.toml").write_text(f"max_runs = {max(streams, 4)}\n")
    entries, leaf = branch_entries(200, seed=29)
    await import_session(home, "bench-streams", entries, leaf)
    tokens = stream_tokens(int(rate * (keys * 0.1 + 12)), rng)  # enough to outlast the typing
    with FakeServer(len(tokens), 0.9 / rate, seed=7, replies=streams) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-bench"}
        app, catalog = await open_app(home, "bench-streams", env, model_ref="openai/fake-model")
        frames = Frames(app)
        async with app.run_test(size=SIZE):
            await asyncio.wait_for(frames.wait_for(usable(app)), 30)
            idle = await type_keys(app, frames, min(keys, 40), rng)
            idle_stats = spread(idle)
            emit(bench="tui.streams_idle", streams=streams, **idle_stats, load1=load1(),
                 what="keys typed with nothing streaming, in the process measured next (the floor)")
            before = rss_mb()
            await start_runs(app, streams)
            # every reply in full swing (~1 s of tokens each): a bench watches the runs, no event says it
            while len(said := streamed_chars(app)) < streams or min(said) < rate * 4:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            peaks = [rss_mb()]

            async def sample() -> None:  # the peak while typing, 10 times a second
                while True:
                    await asyncio.sleep(0.1)
                    peaks.append(rss_mb())

            sampler = asyncio.create_task(sample())
            f0, t0 = frames.count, time.perf_counter()
            with profiled(f"streams_{streams}"), GcWatch() as gcw:
                lat = await type_keys(app, frames, keys, rng)
            f1, t1 = frames.count, time.perf_counter()
            sampler.cancel()
            peak = max(peaks)
            going = len(streamed_chars(app))
            await app.chat.halt()  # (the runs end before the store closes)
            sent = fake.sent()
            stats = spread(lat)
            emit(bench="tui.streams", streams=streams, **stats,
                 vs_idle_p95=round(stats["p95_ms"] / max(idle_stats["p95_ms"], 0.1), 2),
                 fps=round((f1 - f0) / (t1 - t0), 1), going_throughout=going == streams,
                 server_tokens_per_s=round(sent["tokens"] / sent["seconds"], 1) if sent.get("seconds") else None,
                 target_tokens_per_s=rate * streams, rss_before_mb=before, rss_peak_mb=peak,
                 rss_per_run_mb=round((peak - before) / streams, 1), **gcw.summary(),
                 history_messages=count_messages(entries), load1=load1(),
                 what="key posted as the driver does -> first frame whose composer shows it, while N replies "
                      "stream (the last one's on screen); memory: VmRSS before the runs and its peak while typing")
        await catalog.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="1,4,8", help="comma-separated counts of replies streaming at once")
    ap.add_argument("--keys", type=int, default=60, help="keys typed while they stream")
    ap.add_argument("--rate", type=float, default=100.0, help="one-token chunks a second, each reply")
    ap.add_argument("--quick", action="store_true", help="30 keys")
    ap.add_argument("--profile", metavar="DIR", help="cProfile the typing into DIR/streams_N.prof")
    ap.add_argument("--in-child", action="store_true", help=argparse.SUPPRESS)  # internal: one count, no machine line
    args = ap.parse_args()
    counts = [int(n) for n in args.streams.split(",") if n]
    keys = 30 if args.quick else args.keys
    if not args.in_child:
        machine()
        for n in counts:  # each in a fresh process
            extra = ["--profile", args.profile] if args.profile else []
            await asyncio.to_thread(subprocess.run, [sys.executable, str(Path(__file__).resolve()), "--streams", str(n),  # noqa: ASYNC240  this file's path
                                                     "--keys", str(keys), "--rate", str(args.rate), "--in-child", *extra],
                                    check=True)
        return
    PROFILE["dir"] = args.profile
    with tempfile.TemporaryDirectory(prefix="treechat-bench-streams-") as tmp:
        await measure(counts[0], keys, args.rate, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
