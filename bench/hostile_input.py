"""Hostile input in the app (issue 21, item 10): a huge paste into the composer and a huge search
query, each timed from the event to the app being idle again (a key typed after it answered).

    .venv/bin/python bench/hostile_input.py [--paste-mb 20,0.9] [--query-kb 100] [--sessions 50]

`paste`: one Paste event of each `--paste-mb` MB of text (80-character lines) posted to the
focused composer, the way the terminal driver posts a bracketed paste; then one key. `seconds`
until the key is in the composer, `peak_rss_mb`, what the composer holds (`composer_chars`) and
the notice shown. `search_app`: the search screen over `--sessions` sessions of 40 messages, a
query of `--query-kb` KB pasted in; `seconds_to_type` until a key typed after it is in the box,
`seconds` until its results are drawn. `search_cli`: `treechat search` with the same query,
spawn to exit. Prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402

from treechat.chat import Chat  # noqa: E402
from treechat.config.settings import load_settings  # noqa: E402
from treechat.llm.registry import ModelRegistry  # noqa: E402
from treechat.session.session import Session  # noqa: E402
from treechat.storage import open_catalog  # noqa: E402
from treechat.storage.model import AssistantMessage, TextContent, UserMessage  # noqa: E402
from treechat.tui import TreechatApp  # noqa: E402
from treechat.widgets.composer.view import Composer  # noqa: E402
from treechat.widgets.textual_internals import notifications  # noqa: E402


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


async def until(pilot, predicate, limit: float = 600.0) -> float:
    start = time.perf_counter()
    while not predicate():
        if time.perf_counter() - start > limit:
            raise TimeoutError("gave up")
        await pilot.pause(0.01)
    return time.perf_counter() - start


async def bench_paste(home: Path, mb: float) -> None:
    settings = load_settings(home, env={})
    catalog = await open_catalog("sqlite", home)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env={}), model_ref=None)
    app = TreechatApp(chat, await catalog.create(), detect_servers=False)
    text = ("x" * 79 + "\n") * int(mb * 1e6 / 80)
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            composer = app.query_one(Composer)
            composer.focus()
            await pilot.pause()
            start = time.perf_counter()
            app.post_message(events.Paste(text))
            app.post_message(events.Key("z", "z"))
            await until(pilot, lambda: composer.text.endswith("z"))
            seconds = time.perf_counter() - start
            notes = [n.message for n in notifications(app)]
            emit(bench="paste", paste_mb=mb, seconds=round(seconds, 3), peak_rss_mb=rss_mb(),
                 composer_chars=len(composer.text), notice=notes[-1] if notes else None)
    finally:
        await chat.close()
        await catalog.close()


async def make_sessions(home: Path, count: int) -> None:
    catalog = await open_catalog("sqlite", home)
    try:
        for s in range(count):
            session = await Session.open(await catalog.create())
            for i in range(20):
                await session.append_message(UserMessage(content=f"question {s} {i} about the parser and its tests"))
                await session.append_message(AssistantMessage(content=[TextContent(text=f"answer {s} {i}: it parses")],
                                                              provider="p", model="m"))
    finally:
        await catalog.close()


async def bench_search(home: Path, kb: float) -> None:
    query = ("parser tests " * int(kb * 1000 / 13 + 1))[: int(kb * 1000)]
    settings = load_settings(home, env={})
    catalog = await open_catalog("sqlite", home)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env={}), model_ref=None)
    app = TreechatApp(chat, await catalog.create(), detect_servers=False)
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.press("ctrl+f")
            await pilot.pause()
            from treechat.widgets.screens import SearchScreen

            screen = app.screen
            assert isinstance(screen, SearchScreen), screen
            start = time.perf_counter()
            app.post_message(events.Paste(query))
            app.post_message(events.Key("z", "z"))
            from textual.widgets import Input

            box = screen.query_one(Input)
            count = screen.query_one("#count")
            await until(pilot, lambda: box.value.endswith("z") or len(box.value) >= 1000)
            typed = time.perf_counter() - start
            await until(pilot, lambda: "hits" in str(count.render()))
            seconds = time.perf_counter() - start
            emit(bench="search_app", query_kb=kb, seconds_to_type=round(typed, 3), seconds=round(seconds, 3),
                 query_chars=len(box.value), shown=" ".join(str(count.render()).split()))
    finally:
        await chat.close()
        await catalog.close()
    start = time.perf_counter()
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "treechat", "--home", str(home), "search",
                                   query], capture_output=True, text=True, timeout=600)
    emit(bench="search_cli", query_kb=kb, seconds=round(time.perf_counter() - start, 3), code=done.returncode,
         stderr=done.stderr.strip()[:200])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paste-mb", default="20,0.9", help="paste sizes in MB, comma separated")
    parser.add_argument("--query-kb", type=float, default=100.0)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--only", default="paste,search")
    args = parser.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        if "search" in only:
            home = Path(tmp) / "search"
            asyncio.run(make_sessions(home, args.sessions))
            asyncio.run(bench_search(home, args.query_kb))
        if "paste" in only:
            for i, mb in enumerate(float(x) for x in args.paste_mb.split(",") if x.strip()):
                asyncio.run(bench_paste(Path(tmp) / f"paste{i}", mb))


if __name__ == "__main__":
    main()
