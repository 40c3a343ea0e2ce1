"""tui.branch_open, tui.tree_open / tui.tree_100k and tui.tree_keys; run through `bench/tui.py
--only branch` / `--only tree` (tree_keys also after `--only huge`, bench/tui_large.py)."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.tui_common import (
    Frames,
    GcWatch,
    branch_entries,
    close,
    collect,
    count_messages,
    emit,
    generate,
    import_session,
    judged,
    laid_out_at,
    load1,
    mark_last,
    ms,
    profiled,
    realistic,
    spread,
    time_open,
)

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
    import treechat.storage.tree.index as core_module  # (TreeIndex, timed: the class the controller uses)
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

        # A session this big opens with its path's tree (set_index with `loading`), and the whole
        # tree is read after the first frame (chat/tree.py's TreeLoad): get_tree_columns,
        # TreeIndex(columns), then set_index again. The marks keep their last call, the whole
        # tree's; the frame counted is the first one painted after that tree was set.
        original_init = core_module.TreeIndex.__init__
        storage.get_tree_columns = timed("read", storage.get_tree_columns, True)
        set_any = timed("set_rows", tree.set_index, False)
        set_index = tree.set_index

        def set_whole(*a: Any, **k: Any) -> Any:
            return set_any(*a, **k) if not k.get("loading") else set_index(*a, **k)

        tree.set_index = set_whole
        core_module.TreeIndex.__init__ = timed("index", original_init, False)  # type: ignore[method-assign]  # timed, put back below
        draw_line = tree.render_line

        def render_line(y: int) -> Any:  # the tree repaints (after set_index) in the frame being built
            if marks.get("set_rows_end", 0.0) > marks.get("read_end", float("inf")):
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
            core_module.TreeIndex.__init__ = original_init  # type: ignore[method-assign]  # (put back)
        t = time.perf_counter()
        app.chat.status()  # runs after every persisted message, also while streaming
        status_ms = ms(time.perf_counter() - t)
        t = time.perf_counter()
        app.chat.tree.branch_count()
        branch_count_ms = ms(time.perf_counter() - t)
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        tree_ms = round(med["read_ms"] + med["index_ms"] + med["set_rows_ms"] + med["render_ms"], 1)
        judged("tui.tree_100k", tree_ms, **med, refresh_status_ms=status_ms, branch_count_ms=branch_count_ms, entries=size, branches=50, rows_shown=len(tree.lines), tree_entries=len(tree.layout_data.index),
               runs_tree_ms=[round(r["read_ms"] + r["index_ms"] + r["set_rows_ms"] + r["render_ms"], 1) for r in runs],
               what="get_tree_columns + TreeIndex(columns) + TreeView.set_index + wait for the frame that repaints "
                    "the whole tree with the leaf in view; reload_view_ms = the controller's open (read, index, state, path); "
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

    from treechat.widgets.textual_internals import render_chops

    chops = render_chops(app.screen, region, lambda y: y == region.y)
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

    from treechat.widgets.textual_internals import send_from_terminal, set_terminal_size

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
    keys, resizes, tree_parts, cpu = [], [], [], []
    for key, char in TREE_KEYS:
        moved[0], spent[0] = False, 0.0
        shown = frames.wait_for(lambda: moved[0] and cursor_drawn())
        event = events.Key(key, char)
        event.set_sender(app)
        c0, t0 = time.process_time(), time.perf_counter()
        send_from_terminal(app, event)
        keys.append(ms(await asyncio.wait_for(shown, 10) - t0))
        cpu.append(ms(time.process_time() - c0))
        tree_parts.append(ms(spent[0]))
        await asyncio.sleep(0.05)
    for width, height in TREE_SIZES:
        spent[0] = 0.0
        target = Size(width, height)
        shown = frames.wait_for(partial(lambda target: laid_out_at(app, target) and tree.size.height > 0 and cursor_drawn(),
                                        target))
        c0, t0 = time.process_time(), time.perf_counter()
        set_terminal_size(app, target)  # what the terminal driver does on SIGWINCH (pilot.resize_terminal)
        app.post_message(events.Resize(target, target))
        resizes.append(ms(await asyncio.wait_for(shown, 30) - t0))
        cpu.append(ms(time.process_time() - c0))
        tree_parts.append(ms(spent[0]))
        await asyncio.sleep(0.2)
    both = keys + resizes
    stats = spread(both)
    judged("tui.tree_keys", stats["p95_ms"], **stats, metric="p95", keys_p50_ms=spread(keys)["p50_ms"],
           keys_max_ms=max(keys), keys_ms=dict(zip((f"{i}:{k}" for i, (k, _) in enumerate(TREE_KEYS)), keys)),
           resizes_ms=resizes, keys_cpu_p50_ms=spread(cpu[:len(keys)])["p50_ms"], resizes_cpu_ms=cpu[len(keys):],
           tree_code_max_ms=max(tree_parts), entries=size,
           rows_shown=len(tree.lines), load1=load1(),
           what=f"{len(keys)} tree keys (arrows, pages, {{ }}, g, Home/End) and {len(resizes)} resizes "
                "160x45 <-> 80x24 with the 100k tree focused: event -> first frame with the cursor row drawn "
                "at its place; tree_code_max_ms = the most time one of them spent in TreeView itself; *_cpu_*: this "
                "process's CPU time over the same spans (what the wall times are, less the waits on a busy machine)")

