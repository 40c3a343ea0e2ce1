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

"A frame" is an update the App hands to its driver for the current screen (what a real terminal gets
written; headless skips only the byte encoding). The check reads the compositor's
cells after that update, so a frame counts only if the character is really drawn. `pilot.press()` is
not used for timing: it sleeps >= 40 ms waiting for the process to go idle before it returns.
Never part of pytest (the file name does not match test_*).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/ (whose storage.py would shadow the storage package)

from bench.tui_common import PROFILE, machine  # noqa: E402

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
        from bench.tui_keys import serve_fake

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
        from bench.tui_first_frame import bench_first_frame

        bench_first_frame(3 if q else 9, args.terminal, args.exe)
        return
    if name == "first_message":
        from bench.tui_first_frame import first_frame_env
        from bench.tui_start import bench_first_message

        bench_first_message(2 if q else 5, first_frame_env())
        return
    with tempfile.TemporaryDirectory(prefix="treechat-bench-tui-") as tmp:
        work = Path(tmp)
        if name == "branch":
            from bench.tui_tree import bench_branch

            await bench_branch(500 if q else 2000, 1 if q else 3, work)
        elif name == "tree":
            from bench.tui_tree import bench_tree

            await bench_tree(10_000 if q else 100_000, 1 if q else 3, work)
        elif name == "keystroke":
            from bench.tui_keys import bench_keystroke

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
