"""Large transcripts stay responsive (issue 11 §7): keys and resizes on big views, to the next frame.

Run through `bench/tui.py --only originals` / `--only long_branch` (each in its own process).

1. tui.originals    the real 914-message Pi session (`large-session.v3.jsonl`) imported into SQLite
                    and compacted down to its last few messages; the compaction card is clicked open
                    (the App hands its ~900 originals to the transcript). `expand_ms`: click -> the
                    first frame with the card laid out at its full height (a row or more per original). Then 20 keys with the transcript focused
                    (PgUp/PgDn, ↑/↓, Ctrl+B toggling the tree, which re-lays the transcript out at
                    another width) and 3 resizes 160×45 -> 80×24 -> 160×45 -> 80×24.
2. tui.long_branch  the 2,000-message branch of `tui.branch_open`: Home / End (first / last message of
                    the branch), PgUp/PgDn, ↑/↓, Ctrl+B, then the same 3 resizes.

A key's latency is: key posted as the terminal driver posts it -> the first frame after which what
the key changes (selection, scroll offset, the tree panel, focus, the mounted window) has changed and
is drawn; Home/End additionally need the branch's first/last message on screen. A resize's is: event
posted -> the first frame at the new size whose transcript shows text again (`resize_ms`);
`settle_ms` is when the frames stop (no frame for 300 ms), which catches a screen still being filled
in after its first frame. A key or resize that has not landed after 15 s counts as 15 000 ms
(`timeouts` says how many did).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.storage import emit
from bench.tui_common import (
    MARKER,
    Frames,
    branch_entries,
    close,
    collect,
    count_messages,
    import_session,
    laid_out_at,
    load1,
    ms,
    open_app,
    region_text,
    spread,
)

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi" / "large-session.v3.jsonl"
BIG, SMALL = (160, 45), (80, 24)
TIMEOUT = 15.0


def transcript_of(app: Any) -> Any:
    from treechat.widgets.transcript.view import Transcript

    return app.ui(Transcript)


def visible_text(app: Any) -> str:
    transcript = transcript_of(app)
    return region_text(app, transcript.region, sep="\n")


def state(app: Any) -> tuple:
    """Everything one of the timed keys can change."""
    from treechat.widgets.tree.view import TreeView

    t = transcript_of(app)
    return (round(t.scroll_y), getattr(t, "selected", None), t.start, t.end, app.has_class("-tree-hidden"),
            app.ui(TreeView).has_focus, t.region.width)


async def settle(frames: TimedFrames, quiet: float = 0.3, limit: float = TIMEOUT) -> float:
    """perf_counter of the last frame before `quiet` seconds without one."""
    t0 = time.perf_counter()
    seen = frames.count
    last: float = frames.last or t0
    while time.perf_counter() - t0 < limit:
        await asyncio.sleep(quiet)
        if frames.count == seen:
            return last
        seen, last = frames.count, frames.last or last
    return last


async def press(app: Any, frames: TimedFrames, key: str, landed: Callable[[], bool] | None = None) -> tuple[float, bool]:
    """Post `key` as the driver does; ms to the first frame after its change is drawn."""
    from textual import events

    from treechat.widgets.textual_internals import send_from_terminal

    before = state(app)
    check = landed or (lambda: state(app) != before)
    shown = frames.wait_for(check)
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    t0 = time.perf_counter()
    send_from_terminal(app, event)
    try:
        return ms(await asyncio.wait_for(shown, TIMEOUT) - t0), False
    except TimeoutError:
        return ms(TIMEOUT), True


async def resize(app: Any, frames: TimedFrames, size: tuple[int, int], expect: Callable[[], bool]) -> dict:
    from textual import events
    from textual.geometry import Size

    from treechat.widgets.textual_internals import set_terminal_size

    target = Size(*size)
    shown = frames.wait_for(lambda: laid_out_at(app, target) and transcript_of(app).region.width > 0 and expect())
    t0 = time.perf_counter()
    set_terminal_size(app, target)
    app.post_message(events.Resize(target, target))
    try:
        first = ms(await asyncio.wait_for(shown, TIMEOUT) - t0)
        timeout = False
    except TimeoutError:
        first, timeout = ms(TIMEOUT), True
    return {"resize_ms": first, "settle_ms": ms(await settle(frames) - t0), "timeout": timeout}


async def run_keys(app: Any, frames: TimedFrames, keys: list[tuple[str, Callable[[], bool] | None]]) -> dict:
    transcript = transcript_of(app)
    out: list[float] = []
    per: dict[str, float] = {}
    timeouts = 0
    for key, landed in keys:
        if key != "ctrl+b" and not transcript.has_focus:
            transcript.focus()
            await settle(frames, 0.1)
        lat, timed_out = await press(app, frames, key, landed)
        timeouts += timed_out
        out.append(lat)
        per[key] = max(per.get(key, 0.0), lat)
        await settle(frames, 0.1)  # the next key starts from a drawn screen, as a person's would
    return {**spread(out), "max_by_key_ms": per, "timeouts": timeouts}


async def run_resizes(app: Any, frames: TimedFrames, expect: Callable[[], bool]) -> dict:
    runs = [await resize(app, frames, size, expect) for size in (SMALL, BIG, SMALL)]
    return {"resize_ms": [r["resize_ms"] for r in runs], "settle_ms": [r["settle_ms"] for r in runs],
            "resize_max_ms": max(r["resize_ms"] for r in runs), "settle_max_ms": max(r["settle_ms"] for r in runs),
            "resize_timeouts": sum(r["timeout"] for r in runs)}


def quiet_cursor(app: Any) -> None:
    """No blinking composer cursor: its frames every 0.5 s would hide when the screen settles."""
    from treechat.widgets.composer.view import Composer

    app.ui(Composer).cursor_blink = False


class TimedFrames(Frames):
    """Frames, plus `last`: perf_counter of the newest frame (for `settle`)."""

    def __init__(self, app: Any) -> None:
        from treechat.widgets.textual_internals import on_display

        super().__init__(app)
        self.last: float | None = None

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None:
                self.last = time.perf_counter()

        on_display(app, display)


async def compacted_pi_session(home: Path) -> tuple[str, int]:
    """The Pi fixture imported, then compacted down to its last 6 messages. Returns (sid, originals)."""
    from treechat.session.session import Session
    from treechat.storage import open_catalog
    from treechat.storage.model import MessageEntry
    from treechat.storage.session_file import read_session_file

    header, entries, leaf, _ = read_session_file(FIXTURE)
    catalog = await open_catalog("sqlite", home)
    try:
        storage, _ = await catalog.import_session({**header, "id": "bench-pi"}, entries, leaf)
        session = await Session.open(storage)
        path = await session.get_branch()
        messages = [e for e in path if isinstance(e, MessageEntry)]
        kept = messages[-6]
        await session.append_compaction("## Goal\nKeep going.\n\n## Done\n- " + "\n- ".join(f"step {i}" for i in range(20)),
                                        kept.id, 180_000, tokens_after=9_000, trigger="manual")
        originals = sum(1 for e in path[: path.index(kept)] if isinstance(e, MessageEntry))
        return storage.session_id, originals
    finally:
        await catalog.close()


async def bench_originals(work: Path) -> None:
    from treechat.widgets.transcript.message_view import CompactionCard

    home = work / "originals"
    home.mkdir()
    sid, originals = await compacted_pi_session(home)
    collect()
    app, catalog = await open_app(home, sid, env={})
    frames = TimedFrames(app)
    ctx = app.run_test(size=BIG)
    pilot = await ctx.__aenter__()
    try:
        await asyncio.wait_for(frames.wait_for(lambda: "compacted" in visible_text(app)), 60)
        quiet_cursor(app)
        await settle(frames)
        card = app.query_one(CompactionCard)
        shown = frames.wait_for(lambda: card.size.height >= originals)  # one row or more per original, laid out
        t0 = time.perf_counter()
        await pilot.click(CompactionCard)
        try:
            expand = ms(await asyncio.wait_for(shown, 60) - t0)
        except TimeoutError:
            expand = None
        expand_settle = ms(await settle(frames) - t0)
        transcript = transcript_of(app)
        transcript.scroll_to(y=transcript.max_scroll_y // 2, animate=False)  # among the rows: room both ways
        await settle(frames)
        keys: list[tuple[str, Callable[[], bool] | None]] = [(k, None) for k in ["pageup"] * 3 + ["pagedown"] * 3
                                                             + ["up"] * 5 + ["down"] * 3]
        keys += [("ctrl+b", None)] * 6  # focus tree, hide, show (focused), hide, show, hide
        key_fig = await run_keys(app, frames, keys)
        res = await run_resizes(app, frames, lambda: bool(visible_text(app).strip()))
        emit(bench="tui.originals", ms=max(key_fig["p95_ms"], res["resize_max_ms"]), metric="max(key p95, resize)",
             expand_ms=expand, expand_settle_ms=expand_settle, originals=originals, **key_fig, **res, load1=load1(),
             what="914-message Pi session compacted, card expanded: keys and resizes -> first frame showing the change")
    finally:
        await close(ctx, catalog)


async def bench_long_branch(messages: int, work: Path) -> None:
    entries, leaf = branch_entries(messages, seed=11)
    first_text = next(str(e.message.content)[:30] for e in entries if e.type == "message" and e.message.role == "user")
    first_text = first_text.split("\n")[0][:24]
    home = work / "long"
    home.mkdir()
    await import_session(home, "bench-long", entries, leaf)
    n = count_messages(entries)
    del entries
    collect()
    app, catalog = await open_app(home, "bench-long", env={})
    frames = TimedFrames(app)
    ctx = app.run_test(size=BIG)
    await ctx.__aenter__()
    try:
        await asyncio.wait_for(frames.wait_for(lambda: MARKER in visible_text(app).replace("\n", "")), 60)
        quiet_cursor(app)
        await settle(frames)

        def at_top() -> bool:
            return first_text in visible_text(app)

        def at_bottom() -> bool:
            return MARKER in visible_text(app).replace("\n", "")

        keys: list[tuple[str, Callable[[], bool] | None]] = [("home", at_top), ("end", at_bottom)] * 2
        keys += [(k, None) for k in ["pageup"] * 3 + ["pagedown"] * 3 + ["up"] * 3 + ["down"] * 3]
        keys += [("home", at_top), ("ctrl+b", None), ("ctrl+b", None), ("ctrl+b", None)]
        key_fig = await run_keys(app, frames, keys)
        res = await run_resizes(app, frames, lambda: bool(visible_text(app).strip()))
        emit(bench="tui.long_branch", ms=max(key_fig["p95_ms"], res["resize_max_ms"]), metric="max(key p95, resize)",
             messages=n, **key_fig, **res, load1=load1(),
             what="2,000-message branch: Home/End, PgUp/PgDn, ↑/↓, Ctrl+B, resizes -> first frame showing the change")
    finally:
        await close(ctx, catalog)


# ------------------------------------------------------------------ huge sessions (issue 26)

def _rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return tuple(round(int(fields[k].split()[0]) / 1024, 1) for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def huge_home(size: int, cache: Path) -> tuple[Path, str]:
    """A SQLite home holding the generated `size`-entry session (bench/scale.py's file), imported
    with the real CLI once and kept in the cache folder."""
    import subprocess
    import sys

    from bench.scale import generated

    file = generated(size, cache)
    home = cache / f"home-{size}"
    if not (home / ".complete").exists():
        import shutil

        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        subprocess.run([sys.executable, "-m", "treechat", "--home", str(home), "import", str(file)], check=True,
                       capture_output=True)
        (home / ".complete").write_text("")
    return home, f"bench-{size}"


async def bench_huge(size: int, cache: Path) -> None:
    """tui.huge_open: the App on a generated session of `size` entries (50 branches; 1M: ~25k
    messages on the active path): open_catalog -> first frame with the composer focused and the
    last message on screen (`ms`), and this process's memory then (`rss_mb`, `peak_rss_mb`). A big
    session's whole tree is read after that frame: `whole_tree_ms` until it is in the panel, the
    memory then (`tree_rss_mb`, `tree_peak_rss_mb`). Then tree keys with the tree focused."""
    import time

    from bench.tui_common import time_open
    from bench.tui_tree import tree_keys
    from treechat.widgets.tree.view import TreeView

    home, sid = huge_home(size, cache)
    collect()
    base_rss = _rss_mb()[0]
    t0 = time.perf_counter()
    fig, app, ctx, catalog, _ = await time_open(home, sid)
    rss, peak = _rss_mb()
    try:
        tree = app.ui(TreeView)
        while app.chat.s.tree_load is not None or tree.reading or len(tree.layout_data.index) < size // 2:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        whole = round((time.perf_counter() - t0) * 1000, 1)
        tree_rss, tree_peak = _rss_mb()
        emit(bench="tui.huge_open", entries=size, ms=fig["ms"], first_frame_ms=fig["first_frame_ms"],
             rss_mb=rss, peak_rss_mb=peak, whole_tree_ms=whole, tree_rss_mb=tree_rss, tree_peak_rss_mb=tree_peak,
             before_open_rss_mb=base_rss, path_entries=len(app.chat.tree.path_ids(app.chat.session.leaf_id)),
             load1=load1(), what="open_catalog -> composer focused and the last message on screen; this process's "
             "RSS then; whole_tree_ms: until a big session's whole tree is in the panel")
        frames = Frames(app)
        await tree_keys(app, frames, tree, size)
    finally:
        await close(ctx, catalog)
