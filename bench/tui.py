"""TUI benchmark: the four budgets of issue 5, one JSON object per measurement.

    .venv/bin/python bench/tui.py [--quick] [--only first_frame,first_message,branch,tree,keystroke,originals,long_branch]
                                  [--terminal pty|tmux]

1. tui.first_frame   the real `treechat` console script (fresh home, SQLite, no network) and a
                     minimal Textual app (bench/minimal_textual.py: an Input and a Footer),
                     alternating, in a 160x45 pseudo-terminal read directly (--terminal pty) or a
                     tmux pane polled (--terminal tmux: what a user sees): spawn -> the composer
                     placeholder and the footer's palette key on screen. Medians of 9 (3 with
                     --quick) after one warm-up round; vs_minimal = treechat / minimal (issue 27:
                     <= 1.5). tui.first_frame_minimal: the minimal app's own figures.
   tui.first_message (bench/tui_start.py) a message typed the moment the composer shows, against a
                     fake llama.cpp whose probe endpoints trickle for ever: Enter -> on screen, and
                     -> answered (issue 27: 0.5 s and 3 s).
2. tui.branch_open   a SQLite session whose active branch has 2,000 messages (user / assistant with
                     markdown and code / tool calls and multi-line tool output): open_catalog ->
                     the first frame with the composer focused and the last message on screen.
3. tui.tree_100k     a 100k-entry, 50-branch session open in the App: `reload_view()` with the tree
                     index dropped, split into storage read, index build, `TreeView.set_rows`, and
                     the first frame showing the tree's leaf marker; median of 3.
   tui.tree_keys     then, the tree focused: 20 keys and 4 resizes 160x45 <-> 80x24, each from the
                     event to the first frame drawing the cursor row at its place; p95 < 100 ms.
4. tui.keystroke     while a reply streams at ~200 one-token chunks/s from a loopback fake
                     provider (its own process, like a real server), keys are posted
                     to the App the way the terminal driver posts them; latency = post -> the first
                     frame handed to the driver whose composer cells show the new character.
                     p50/p95/max over 100 keys (tui.keystroke_idle: the same with nothing streaming).
5. tui.originals / tui.long_branch (bench/tui_large.py): keys and resizes on an expanded compaction
                     card over ~900 originals and on the 2,000-message branch, to the next frame.

"A frame" is a call of `App._display` with a compositor update for the current screen (what a real
terminal gets written; headless skips only the byte encoding). The check reads the compositor's
cells after that update, so a frame counts only if the character is really drawn. `pilot.press()` is
not used for timing: it sleeps >= 40 ms waiting for the process to go idle before it returns.
Never part of pytest (the file name does not match test_*).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import platform
import random
import re
import select
import signal
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
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


# ------------------------------------------------------------------ 1. first frame (real pty)

ANSI = re.compile(rb"\x1b\[[0-9;?<>=$ ]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOPXZ\\^_c]")


FIRST_FRAME_SIZE = (160, 45)  # the terminal of issue 27's figures
SHOWN = ("Message… (/help", "palette")  # the composer's placeholder and the footer's palette key (both apps)


def first_frame_env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE off: an installed treechat has its .pyc files (pip compiles them), as
    # Textual's have here; without them every start compiles our modules again (~0.5 s)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "TREECHAT_", "TEXTUAL"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(TERM="xterm-256color", OPENAI_API_KEY="sk-bench-offline",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # port 9: refused
    return env


def first_frame_once(argv: list[str], cols: int, rows: int, env: dict[str, str] | None = None,
                     timeout: float = 20.0) -> dict:
    """Spawn `argv` in a pseudo-terminal of cols x rows; ms until the output holds SHOWN."""
    import fcntl
    import pty
    import termios

    env = dict(env or first_frame_env(), COLUMNS=str(cols), LINES=str(rows))
    found: dict[str, float] = {}
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # child: the terminal size is set on our side of the pty below, before any output
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    raw, seen = b"", ""
    first_byte: float | None = None
    done: float | None = None
    try:
        while time.perf_counter() - t0 < timeout:
            if not select.select([fd], [], [], 0.02)[0]:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            first_byte = first_byte or time.perf_counter()
            raw += chunk
            # only the new output (and a little before it, for a sequence cut in two) is read: read
            # whole each time, the output of a bigger screen cost the reader time, and a slow
            # reader slows the writer down
            seen = (seen + ANSI.sub(b"", raw[-(len(chunk) + 256):]).decode("utf-8", "replace"))[-4096:]
            for marker in SHOWN:
                if marker not in found and (marker in seen or marker in seen.lower()):
                    found[marker] = time.perf_counter()
            if len(found) == len(SHOWN):
                done = time.perf_counter()
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    if done is None or first_byte is None:
        raise RuntimeError(f"no first frame within {timeout}s; output tail: {ANSI.sub(b'', raw)[-400:]!r}")
    return {"ms": ms(done - t0), "composer_ms": ms(found[SHOWN[0]] - t0), "first_byte_ms": ms(first_byte - t0),
            "bytes": len(raw)}


class Tmux:
    """A tmux session of its own at cols x rows: `once(argv)` respawns its pane with argv and polls
    the pane's screen (capture-pane) until it shows SHOWN. What a user sees in a real terminal."""

    def __init__(self, cols: int, rows: int) -> None:
        import shutil
        import subprocess

        self.run = subprocess.run
        self.name = f"treechat-bench-ff-{os.getpid()}"
        tmux = shutil.which("tmux")
        if tmux is None:
            raise RuntimeError("tmux is not installed")
        self.tmux: str = tmux
        self.run([self.tmux, "new-session", "-d", "-s", self.name, "-x", str(cols), "-y", str(rows), "sleep 600"],
                 check=True)
        self.run([self.tmux, "set-option", "-t", self.name, "remain-on-exit", "on"], check=True)

    def once(self, argv: list[str], env: dict[str, str], timeout: float = 20.0) -> dict:
        import shlex

        command = " ".join(["exec", "env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                            *map(shlex.quote, argv)])
        found: dict[str, float] = {}
        shown = ""
        t0 = time.perf_counter()
        self.run([self.tmux, "respawn-pane", "-k", "-t", self.name, command], check=True)
        try:
            while time.perf_counter() - t0 < timeout:
                shown = self.run([self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True,
                                 text=True).stdout
                now = time.perf_counter()
                for marker in SHOWN:
                    if marker not in found and (marker in shown or marker in shown.lower()):
                        found[marker] = now
                if len(found) == len(SHOWN):
                    return {"ms": ms(now - t0), "composer_ms": ms(found[SHOWN[0]] - t0)}
                time.sleep(0.005)
            raise RuntimeError(f"no first frame in tmux within {timeout}s; screen: {shown[-400:]!r}")
        finally:
            self.run([self.tmux, "respawn-pane", "-k", "-t", self.name, "sleep 600"])

    def close(self) -> None:
        self.run([self.tmux, "kill-session", "-t", self.name])


def bench_first_frame(repeat: int, terminal: str, exe: str | None = None) -> None:
    """treechat and the minimal Textual app (bench/minimal_textual.py), alternating, in the same
    kind of terminal at 160x45; the medians and their ratio (issue 27: ≤ 1.5)."""
    cols, rows = FIRST_FRAME_SIZE
    python = str(ROOT / ".venv/bin/python")
    treechat = exe or str(ROOT / ".venv/bin/treechat")
    apps = {"treechat": lambda home: [treechat, "--home", home],
            "minimal": lambda home: [python, str(ROOT / "bench/minimal_textual.py")]}
    env = first_frame_env()
    tmux = Tmux(cols, rows) if terminal == "tmux" else None
    runs: dict[str, list[dict]] = {name: [] for name in apps}
    loads = [load1()]
    try:
        for i in range(repeat + 1):  # the first round warms the page cache and .pyc files: not counted
            for name in (list(apps) if i % 2 else list(apps)[::-1]):
                with tempfile.TemporaryDirectory(prefix="treechat-bench-ff-") as home:
                    argv = apps[name](home)
                    fig = tmux.once(argv, env) if tmux else first_frame_once(argv, cols, rows, env)
                if i:
                    runs[name].append(fig)
            loads.append(load1())
    finally:
        if tmux:
            tmux.close()
    med = {name: statistics.median(r["ms"] for r in got) for name, got in runs.items()}
    composer = {name: statistics.median(r["composer_ms"] for r in got) for name, got in runs.items()}
    fields: dict[str, Any] = {}
    if terminal == "pty":
        fields["first_byte_ms"] = statistics.median(r["first_byte_ms"] for r in runs["treechat"])
    emit(bench="tui.first_frame_minimal", ms=med["minimal"], composer_ms=composer["minimal"],
         runs_ms=[r["ms"] for r in runs["minimal"]], terminal=f"{terminal} {cols}x{rows}",
         what="bench/minimal_textual.py (an Input and a Footer): spawn -> its placeholder and footer on screen; "
              "composer_ms: the placeholder alone")
    judged("tui.first_frame", med["treechat"], runs_ms=[r["ms"] for r in runs["treechat"]], **fields,
           vs_minimal=round(med["treechat"] / med["minimal"], 2), vs_minimal_ok=med["treechat"] <= 1.5 * med["minimal"],
           composer_ms=composer["treechat"], composer_vs_minimal=round(composer["treechat"] / composer["minimal"], 2),
           minimal_ms=med["minimal"], terminal=f"{terminal} {cols}x{rows}", load1=loads,
           exe=treechat, what="spawn treechat --home FRESH -> composer placeholder and footer keys on screen; "
                "alternating with the minimal Textual app, medians; vs_minimal = treechat / minimal (issue 27: ≤ 1.5); "
                "composer_ms: until the composer shows (its placeholder), without waiting for the footer")


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
        self.app, self.count = app, 0
        self.waiters: list[Any] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is None or app._batch_count or screen is not app.screen:
                return
            now = time.perf_counter()
            self.count += 1
            for waiter in list(self.waiters):
                predicate, future = waiter
                if not future.done() and predicate():
                    future.set_result(now)
                    self.waiters.remove(waiter)

        app._display = display  # Screen calls `self.app._display(...)`: the instance attribute wins

    def wait_for(self, predicate: Callable[[], bool]) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.waiters.append((predicate, future))
        return future


def region_text(app: Any, region: Any = None, sep: str = "\n") -> str:
    """What the terminal shows in `region` (screen coordinates; default everything), as text."""
    from textual.strip import Strip

    compositor = app.screen._compositor
    if region is None:
        return sep.join(s.text for s in compositor.render_strips())
    # only the widgets over `region` are asked for their (cached) lines: cheap enough per frame
    chops = compositor._render_chops(region, lambda y: region.y <= y < region.bottom)
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


# ------------------------------------------------------------------ 2. 2,000-message branch

async def bench_branch(messages: int, repeat: int, work: Path) -> None:
    entries, leaf = branch_entries(messages, seed=11)
    home = work / "branch"
    home.mkdir()
    await import_session(home, "bench-branch", entries, leaf)
    n_messages, n_entries = count_messages(entries), len(entries)
    chars = sum(len(str(e.message.content)) for e in entries if e.type == "message")
    del entries
    collect()
    runs = []
    for _ in range(repeat):
        fig, app, ctx, catalog, _ = await time_open(home, "bench-branch")
        await close(ctx, catalog)
        runs.append(fig)
    judged("tui.branch_open", statistics.median(r["ms"] for r in runs), runs_ms=[r["ms"] for r in runs],
           first_frame_ms=statistics.median(r["first_frame_ms"] for r in runs), messages=n_messages,
           entries=n_entries, chars=chars,
           what="open_catalog -> first frame with the composer focused and the last message on screen")


# ------------------------------------------------------------------ 3. 100k-entry tree

async def bench_tree(size: int, repeat: int, work: Path) -> None:
    import treechat.storage.tree_index as core_module  # (TreeIndex.build, timed: the class the controller uses)
    from treechat.widgets.tree.view import TreeView

    t0 = time.perf_counter()
    entries, leaf = generate(size)
    entries = mark_last(realistic(entries, random.Random(5)))
    home = work / "tree"
    home.mkdir()
    await import_session(home, "bench-tree", entries, leaf)
    del entries  # the App's heap only: 100k generated entries would make every GC pause longer
    collect()
    setup = ms(time.perf_counter() - t0)
    fig, app, ctx, catalog, _ = await time_open(home, "bench-tree")
    try:
        emit(bench="tui.tree_open", ms=fig["ms"], first_frame_ms=fig["first_frame_ms"], entries=size, setup_ms=setup,
             what="open_catalog -> App usable on the tree session (informational; the budget is tui.tree_100k)")
        storage, tree = app.chat.session.storage, app.ui(TreeView)
        marks: dict[str, float] = {}

        def timed(name: str, fn: Callable, is_async: bool) -> Callable:
            if is_async:
                async def wrapped(*a, **k):
                    s = time.perf_counter()
                    try:
                        return await fn(*a, **k)
                    finally:
                        marks[name] = time.perf_counter() - s
                        marks[name + "_end"] = time.perf_counter()
                return wrapped

            def wrapped_sync(*a, **k):
                s = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    marks[name] = time.perf_counter() - s
                    marks[name + "_end"] = time.perf_counter()
            return wrapped_sync

        original_build = core_module.TreeIndex.__dict__["build"]
        storage.get_tree_rows = timed("read", storage.get_tree_rows, True)
        tree.set_index = timed("set_rows", tree.set_index, False)
        core_module.TreeIndex.build = classmethod(timed("index", original_build.__func__, False))  # type: ignore[method-assign,assignment]  # timed, put back below
        draw_line = tree.render_line

        def render_line(y: int) -> Any:  # the tree repaints (after set_index) in the frame being built
            if "set_rows_end" in marks:
                marks.setdefault("painted", time.perf_counter())
            return draw_line(y)

        def leaf_in_view() -> bool:  # set_rows centres the cursor on the leaf
            top = round(tree.scroll_y)
            return top <= tree.cursor < top + tree.scrollable_content_region.height

        tree.render_line = render_line
        frames = Frames(app)
        runs = []
        try:
            for _ in range(repeat):
                marks.clear()
                await asyncio.sleep(0.2)
                drawn = frames.wait_for(lambda: "painted" in marks and leaf_in_view())
                with profiled("tree_reload"), GcWatch() as gcw:
                    start = time.perf_counter()
                    await app.chat.open(storage)  # as after a session switch: the tree from storage
                    reload_done = time.perf_counter()
                    t_drawn = await asyncio.wait_for(drawn, 30)
                runs.append({**gcw.summary(), "read_ms": ms(marks["read"]), "index_ms": ms(marks["index"]), "set_rows_ms": ms(marks["set_rows"]),
                             "render_ms": ms(t_drawn - marks["set_rows_end"]),
                             "reload_view_ms": ms(reload_done - start), "to_frame_ms": ms(t_drawn - start)})
        finally:
            core_module.TreeIndex.build = original_build  # type: ignore[method-assign]  # (put back)
        t = time.perf_counter()
        app.chat.status()  # runs after every persisted message, also while streaming
        status_ms = ms(time.perf_counter() - t)
        t = time.perf_counter()
        app.chat.tree.branch_count()
        branch_count_ms = ms(time.perf_counter() - t)
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        tree_ms = round(med["read_ms"] + med["index_ms"] + med["set_rows_ms"] + med["render_ms"], 1)
        judged("tui.tree_100k", tree_ms, **med, refresh_status_ms=status_ms, branch_count_ms=branch_count_ms, entries=size, branches=50, rows_shown=len(tree.lines),
               runs_tree_ms=[round(r["read_ms"] + r["index_ms"] + r["set_rows_ms"] + r["render_ms"], 1) for r in runs],
               what="get_tree_rows + TreeIndex.build + TreeView.set_index + wait for the frame that repaints the tree "
                    "with the leaf in view; reload_view_ms = the controller's open (read, index, state, path); "
                    "to_frame_ms = from the open until that frame (transcript, status too)")
        try:
            await tree_keys(app, frames, tree, size)
        except TimeoutError:  # older code could leave a move unpainted: say so, keep the rest
            emit(bench="tui.tree_keys", ok=False, error="an event was never drawn (10 s)")
    finally:
        await close(ctx, catalog)


def row_strip(app: Any, region: Any) -> Any:
    """The compositor's cells of a one-row screen region, as a Strip (styles included)."""
    from textual.strip import Strip

    compositor = app.screen._compositor
    chops = compositor._render_chops(region, lambda y: y == region.y)
    return Strip.join([s for s in chops[region.y].values() if s is not None]).crop(region.x, region.right)


# The keys of tui.tree_keys: each moves the cursor (from the leaf of the 50-branch session).
TREE_KEYS = [("up", None)] * 4 + [("down", None)] * 2 + [("pageup", None)] * 3 + [("pagedown", None)] + \
    [("left_curly_bracket", "{")] * 2 + [("right_curly_bracket", "}"), ("g", "g"), ("home", None), ("end", None),
                                         ("g", "g"), ("up", None), ("pagedown", None), ("up", None)]
TREE_SIZES = [(160, 45), (80, 24), (160, 45), (80, 24)]


async def tree_keys(app: Any, frames: Frames, tree: Any, size: int) -> None:
    """tui.tree_keys: the 100k tree shown and focused; keys and terminal resizes, each timed from
    the event (posted as the driver does) to the first frame in which the tree shows the cursor
    row with its background at the new position (for a resize: at the new terminal size).
    `tree_ms`: the time spent in the tree's own code meanwhile (drawing lines, resize handling)."""
    from textual import events
    from textual.geometry import Region, Size

    spent = [0.0]

    def counted(fn: Callable) -> Callable:
        def wrapped(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t
        return wrapped

    tree.render_line = counted(tree.render_line)
    tree.on_resize = counted(tree.on_resize)
    moved = [False]
    set_cursor = tree._set_cursor

    def set_cursor_marked(*a: Any, **k: Any) -> None:
        set_cursor(*a, **k)
        moved[0] = True

    tree._set_cursor = set_cursor_marked

    def cursor_drawn() -> bool:
        top = round(tree.scroll_y)
        if not top <= tree.cursor < top + tree.scrollable_content_region.height:
            return False
        content = tree.content_region
        strip = row_strip(app, Region(content.x, content.y + tree.cursor - top, content.width, 1))
        want = tree.get_component_rich_style("tree-view--cursor").bgcolor
        return any(seg.style is not None and seg.style.bgcolor == want for seg in strip)

    tree.focus()
    await asyncio.wait_for(frames.wait_for(lambda: tree.has_focus and cursor_drawn()), 10)
    keys, resizes, tree_parts = [], [], []
    for key, char in TREE_KEYS:
        moved[0], spent[0] = False, 0.0
        shown = frames.wait_for(lambda: moved[0] and cursor_drawn())
        event = events.Key(key, char)
        event.set_sender(app)
        t0 = time.perf_counter()
        app._driver.send_message(event)
        keys.append(ms(await asyncio.wait_for(shown, 10) - t0))
        tree_parts.append(ms(spent[0]))
        await asyncio.sleep(0.05)
    for width, height in TREE_SIZES:
        spent[0] = 0.0
        target = Size(width, height)
        shown = frames.wait_for(partial(lambda target: app.size == target and tree.size.height > 0 and cursor_drawn(),
                                        target))
        t0 = time.perf_counter()
        app._driver._size = target  # what the terminal driver does on SIGWINCH (pilot.resize_terminal)
        app.post_message(events.Resize(target, target))
        resizes.append(ms(await asyncio.wait_for(shown, 30) - t0))
        tree_parts.append(ms(spent[0]))
        await asyncio.sleep(0.2)
    both = keys + resizes
    stats = spread(both)
    judged("tui.tree_keys", stats["p95_ms"], **stats, metric="p95", keys_p50_ms=spread(keys)["p50_ms"],
           keys_max_ms=max(keys), keys_ms=dict(zip((f"{i}:{k}" for i, (k, _) in enumerate(TREE_KEYS)), keys)),
           resizes_ms=resizes, tree_code_max_ms=max(tree_parts), entries=size,
           rows_shown=len(tree.lines), load1=load1(),
           what=f"{len(keys)} tree keys (arrows, pages, {{ }}, g, Home/End) and {len(resizes)} resizes "
                "160x45 <-> 80x24 with the 100k tree focused: event -> first frame with the cursor row drawn "
                "at its place; tree_code_max_ms = the most time one of them spent in TreeView itself")


# ------------------------------------------------------------------ 4. keystrokes while streaming

class FakeServer:
    """tests.fake_provider.FakeProvider in a child process (a real server does not share our GIL or
    event loop; on its own thread it lost the GIL to the App and sent ~70 tokens/s). It serves one
    scripted reply: `tokens` one-token chunks with `gap` seconds between them, then reports how
    long the sending took."""

    def __init__(self, tokens: int, gap: float, seed: int) -> None:
        self.args = [sys.executable, str(Path(__file__).resolve()), "--serve-fake", f"{tokens},{gap},{seed}"]

    def __enter__(self) -> FakeServer:
        import subprocess

        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=str(ROOT))
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("the fake provider process did not start")
        return self

    def sent(self) -> dict:
        """{"tokens", "seconds"} of the finished (or cut) reply; stops the server."""
        import json

        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        line = self.proc.stdout.readline()
        self.proc.wait(10)
        return json.loads(line) if line.strip() else {}

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


async def serve_fake(spec: str) -> None:
    """Child-process side of FakeServer: print the base URL, serve, print what was sent when stdin closes."""
    import json

    from tests.fake_provider import FakeProvider, Sleep

    count, gap, seed = spec.split(",")
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
        app._driver.send_message(key)  # what the terminal driver's input thread does with a key
        latencies.append(ms(await asyncio.wait_for(shown, 5) - t0))
        await asyncio.sleep(rng.uniform(0.02, 0.06))  # a fast typist: ~25 keys/s
    return latencies


def spread(values: list[float]) -> dict:
    s = sorted(values)
    return {"p50_ms": round(statistics.median(s), 1), "p95_ms": s[min(len(s) - 1, int(len(s) * 0.95))], "max_ms": s[-1], "keys": len(s)}


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


# ------------------------------------------------------------------ main

async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (same budgets, so judge with care)")
    ap.add_argument("--only", default="first_frame,first_message,branch,tree,keystroke,originals,long_branch",
                    help="comma-separated subset")
    ap.add_argument("--terminal", choices=("pty", "tmux"), default="pty",
                    help="first_frame: a pseudo-terminal read directly, or a tmux pane polled (what a user sees)")
    ap.add_argument("--exe", help="first_frame: this treechat (an installed wheel's) instead of .venv/bin/treechat")
    ap.add_argument("--huge", action="store_true", help="--only huge: the 1M-entry session (default 100k)")
    ap.add_argument("--profile", metavar="DIR", help="cProfile the streaming keystrokes and the tree reload into DIR")
    ap.add_argument("--in-child", action="store_true", help=argparse.SUPPRESS)  # internal: one measurement, no machine line
    ap.add_argument("--serve-fake", help=argparse.SUPPRESS)  # internal: the child process of FakeServer
    ap.add_argument("--serve-local", action="store_true", help=argparse.SUPPRESS)  # internal: tui_start's server
    args = ap.parse_args()
    if args.serve_fake:
        await serve_fake(args.serve_fake)
        return
    if args.serve_local:
        from bench.tui_start import serve_local

        await serve_local()
        return
    only = [name for name in args.only.split(",") if name]
    if not args.in_child:
        machine()
    if len(only) > 1:  # each measurement in a fresh process: the 100k tree's heap would lengthen later GC pauses
        import subprocess

        extra = (["--quick"] if args.quick else []) + ["--terminal", args.terminal] + (["--exe", args.exe] if args.exe else []) + (["--profile", args.profile] if args.profile else []) + \
            (["--huge"] if args.huge else [])
        for name in only:
            await asyncio.to_thread(subprocess.run, [sys.executable, str(Path(__file__).resolve()),  # noqa: ASYNC240  this file's path
                                                     "--only", name, "--in-child", *extra], check=True)
        return
    PROFILE["dir"] = args.profile
    q, name = args.quick, only[0]
    if name == "first_frame":
        bench_first_frame(3 if q else 9, args.terminal, args.exe)
        return
    if name == "first_message":
        from bench.tui_start import bench_first_message

        bench_first_message(2 if q else 5, first_frame_env())
        return
    with tempfile.TemporaryDirectory(prefix="treechat-bench-tui-") as tmp:
        work = Path(tmp)
        if name == "branch":
            await bench_branch(500 if q else 2000, 1 if q else 3, work)
        elif name == "tree":
            await bench_tree(10_000 if q else 100_000, 1 if q else 3, work)
        elif name == "keystroke":
            await bench_keystroke(30 if q else 100, 200, 200.0, work)
        elif name == "originals":
            from bench.tui_large import bench_originals

            await bench_originals(work)
        elif name == "long_branch":
            from bench.tui_large import bench_long_branch

            await bench_long_branch(500 if q else 2000, work)
        elif name == "huge":
            from bench.scale import default_cache
            from bench.tui_large import bench_huge

            await bench_huge(1_000_000 if args.huge else 100_000, default_cache())
        else:
            raise SystemExit(f"unknown measurement {name!r}: first_frame, first_message, branch, tree, keystroke, "
                             "originals, long_branch, huge")


if __name__ == "__main__":
    asyncio.run(main())
