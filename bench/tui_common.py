"""What the TUI benches share (bench/tui.py and the modules it runs): figures and budgets, the
profiler and GC watch, the sessions they generate, and how a frame is seen and timed.

"A frame" is an update the App hands to its driver for the current screen (what a real terminal gets
written; headless skips only the byte encoding: `textual_internals.on_display`). The check reads the compositor's
cells after that update, so a frame counts only if what is waited for is really drawn.
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # before bench/ (whose storage.py would shadow the storage package)

from bench.storage import SESSION_TS, WORDS, emit, generate, sentence  # noqa: E402
from tests.narrow import assistant_of, first_text  # noqa: E402
from treechat.storage import open_catalog  # noqa: E402
from treechat.storage.model import AssistantMessage, TextContent, ToolResultMessage, UserMessage  # noqa: E402

MARKER = "ZQXBENCHLASTLINE"
BUDGETS = {"tui.first_frame": 1000, "tui.branch_open": 1000, "tui.tree_100k": 300, "tui.keystroke": 50,
           "tui.tree_keys": 50}
SIZE = (140, 44)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def load1() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def judged(name: str, value: float, **fields: Any) -> None:
    strict = name in ("tui.keystroke", "tui.tree_keys")  # p95 budgets: "under"
    emit(bench=name, ms=value, budget_ms=BUDGETS[name], ok=value < BUDGETS[name] if strict else value <= BUDGETS[name], **fields)


PROFILE: dict[str, Any] = {"dir": None}


class profiled:
    """With --profile DIR: cProfile the block into DIR/NAME.prof and print its top functions to stderr."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.prof = None
        if PROFILE["dir"]:
            import cProfile

            self.prof = cProfile.Profile()
            self.prof.enable()

    def __exit__(self, *exc: Any) -> None:
        if self.prof is None:
            return
        import pstats

        self.prof.disable()
        path = Path(PROFILE["dir"]) / f"{self.name}.prof"
        self.prof.dump_stats(path)
        print(f"--- profile {self.name}: {path}", file=sys.stderr)
        pstats.Stats(self.prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)


class GcWatch:
    """Cyclic-GC pauses inside a block: total ms and the longest, per generation (gc.callbacks)."""

    def __enter__(self) -> GcWatch:
        import gc

        self.pauses: list[tuple[int, float]] = []
        self._t = 0.0

        def cb(phase: str, info: dict) -> None:
            if phase == "start":
                self._t = time.perf_counter()
            else:
                self.pauses.append((info["generation"], time.perf_counter() - self._t))

        self._cb = cb
        gc.callbacks.append(cb)
        return self

    def __exit__(self, *exc: Any) -> None:
        import gc

        gc.callbacks.remove(self._cb)

    def summary(self) -> dict:
        gen2 = [d for g, d in self.pauses if g == 2]
        return {"gc_ms": ms(sum(d for _, d in self.pauses)), "gc_max_ms": ms(max((d for _, d in self.pauses), default=0)),
                "gc_gen2": len(gen2), "gc_gen2_ms": ms(sum(gen2))}


def machine() -> None:
    import textual

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    emit(bench="machine", python=platform.python_version(), cpus=os.cpu_count(),
         cpus_usable=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
         cpu=cpu, platform=platform.platform(), textual=textual.__version__,
         load1=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)



def spread(values: list[float]) -> dict:
    s = sorted(values)
    return {"p50_ms": round(statistics.median(s), 1), "p95_ms": s[min(len(s) - 1, int(len(s) * 0.95))], "max_ms": s[-1], "keys": len(s)}



# ------------------------------------------------------------------ sessions

FENCES = ["python", "bash", "json", "rust", ""]


def long_reply(rng: random.Random) -> str:
    """An assistant answer as models write them: paragraphs, a list, sometimes a code block."""
    parts = [sentence(rng, 15, 45).capitalize() + "." for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        parts.append("\n".join(f"- **{rng.choice(WORDS[30:])}**: {sentence(rng, 4, 14)}" for _ in range(rng.randint(2, 5))))
    if rng.random() < 0.4:
        body = "\n".join("    " * rng.randint(0, 2) + sentence(rng, 2, 9) for _ in range(rng.randint(3, 18)))
        parts.append(f"```{rng.choice(FENCES)}\n{body}\n```")
    parts.append(sentence(rng, 8, 30).capitalize() + ".")
    return "\n\n".join(parts)


def realistic(entries: list, rng: random.Random) -> list:
    """bench.storage's entries with model-like lengths (its texts are 5-80 words)."""
    out = []
    for e in entries:
        msg = getattr(e, "message", None)
        if isinstance(msg, AssistantMessage) and msg.stop_reason == "stop":
            msg = msg.model_copy(update={"content": [TextContent(text=long_reply(rng))]})
        elif isinstance(msg, ToolResultMessage):
            out_lines = "\n".join(sentence(rng, 3, 12) for _ in range(rng.randint(1, 40)))
            msg = msg.model_copy(update={"content": [TextContent(text=out_lines)]})
        elif isinstance(msg, UserMessage) and rng.random() < 0.3:
            msg = msg.model_copy(update={"content": msg.content + "\n\n" + sentence(rng, 10, 40) if isinstance(msg.content, str) else msg.content})
        out.append(e.model_copy(update={"message": msg}) if msg is not None else e)
    return out


def collect() -> None:
    """Free what the generator left behind before timing (the App's heap alone decides GC pauses)."""
    import gc

    gc.collect()


def count_messages(entries: list) -> int:
    return sum(1 for e in entries if e.type == "message")


def mark_last(entries: list) -> list:
    """Append MARKER to the last user message or assistant answer (what `usable` looks for on screen)."""
    for i in range(len(entries) - 1, -1, -1):
        msg = getattr(entries[i], "message", None)
        if isinstance(msg, UserMessage) and isinstance(msg.content, str):
            msg = msg.model_copy(update={"content": msg.content + f"\n\nLast line: {MARKER}."})
        elif isinstance(msg, AssistantMessage) and msg.stop_reason == "stop":
            text = first_text(msg) + f"\n\nLast line: {MARKER}."
            msg = msg.model_copy(update={"content": [TextContent(text=text)]})
        else:
            continue
        entries[i] = entries[i].model_copy(update={"message": msg})
        return entries
    raise ValueError("no message to mark")


def branch_entries(messages: int, seed: int) -> tuple[list, str]:
    """One branch with at least `messages` messages, ending on an assistant answer."""
    size = messages + messages // 96
    while True:
        entries, leaf = generate(size, branches=1, seed=seed)
        last = entries[-1]
        if count_messages(entries) >= messages and isinstance(getattr(last, "message", None), AssistantMessage) \
                and assistant_of(last).stop_reason == "stop":
            break
        size += 1
    return mark_last(realistic(entries, random.Random(seed))), leaf


async def import_session(home: Path, sid: str, entries: list, leaf: str) -> None:
    catalog = await open_catalog("sqlite", home)
    try:
        await catalog.import_session({"id": sid, "timestamp": SESSION_TS, "cwd": str(home)}, entries, leaf)
    finally:
        await catalog.close()


# ------------------------------------------------------------------ frames

class Frames:
    """Records every frame the App hands to its driver; resolves waiters on the first frame after
    which their predicate holds (evaluated right after the frame, on the compositor's cells)."""

    def __init__(self, app: Any) -> None:
        from treechat.widgets.textual_internals import batching, on_display

        self.app, self.count = app, 0
        self.waiters: list[Any] = []

        def display(screen: Any, renderable: Any) -> None:
            if renderable is None or batching(app) or screen is not app.screen:
                return
            now = time.perf_counter()
            self.count += 1
            for waiter in list(self.waiters):
                predicate, future = waiter
                if not future.done() and predicate():
                    future.set_result(now)
                    self.waiters.remove(waiter)

        on_display(app, display)

    def wait_for(self, predicate: Callable[[], bool]) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.waiters.append((predicate, future))
        return future


def region_text(app: Any, region: Any = None, sep: str = "\n") -> str:
    """What the terminal shows in `region` (screen coordinates; default everything), as text."""
    from textual.strip import Strip

    from treechat.widgets.textual_internals import render_chops, screen_text

    if region is None:
        return screen_text(app.screen).replace("\n", sep)
    # only the widgets over `region` are asked for their (cached) lines: cheap enough per frame
    chops = render_chops(app.screen, region, lambda y: region.y <= y < region.bottom)
    rows = [Strip.join([s for s in chops[y].values() if s is not None]) for y in region.line_range]
    return sep.join(s.crop(region.x, region.right).text.rstrip() for s in rows)


async def open_app(home: Path, sid: str | None, env: dict[str, str], model_ref: str | None = None):
    """The App as `run_tui` builds it (SQLite, one session), without starting it."""
    from treechat.chat import Chat
    from treechat.config.settings import load_settings
    from treechat.llm.registry import ModelRegistry
    from treechat.tui import TreechatApp

    settings = load_settings(home, env=env)
    catalog = await open_catalog("sqlite", home)
    storage = await (catalog.open(sid) if sid else catalog.create(cwd=str(home)))
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref=model_ref,
                cwd=str(home))
    app = TreechatApp(chat, storage, detect_servers=False)
    return app, catalog


def laid_out_at(app: Any, size: Any) -> bool:
    """The screen was laid out at `size` (App.size changes when the App hears of a resize; the
    screen is laid out at it a timer later, and a frame between is still at the old size)."""
    return app.size == size and app.screen.outer_size == size


def usable(app: Any) -> Callable[[], bool]:
    from treechat.widgets.composer.view import Composer
    from treechat.widgets.transcript.view import Transcript

    def check() -> bool:
        if not isinstance(app.focused, Composer):
            return False
        return MARKER in region_text(app, app.ui(Transcript).region, sep="")

    return check


async def time_open(home: Path, sid: str) -> tuple[dict, Any, Any, Any, Any]:
    """open_catalog -> first usable frame. Returns the figures and the still-running app context."""
    t0 = time.perf_counter()
    app, catalog = await open_app(home, sid, env={})
    frames = Frames(app)
    first = frames.wait_for(lambda: True)
    ready = frames.wait_for(usable(app))
    ctx = app.run_test(size=SIZE)
    pilot = await ctx.__aenter__()
    t_usable = await asyncio.wait_for(ready, 60)
    return {"ms": ms(t_usable - t0), "first_frame_ms": ms(first.result() - t0)}, app, ctx, catalog, pilot


async def close(ctx: Any, catalog: Any) -> None:
    await ctx.__aexit__(None, None, None)
    await catalog.close()

