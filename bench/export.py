"""HTML export benchmark (issue 16): the generated 100k-entry, 50-branch session, end to end.

    .venv/bin/python bench/export.py [--quick] [--size 100000] [--no-browser]

The session from bench/storage.py's `generate()` is written as a Pi file, imported with the real
`treechat import` into a fresh home, and exported with the real `treechat export --format html`
(a child process: wall time and its own peak RSS). In-process figures split the time: reading the
entries page by page, rendering the assistant replies' Markdown alone, the whole `export_html`.
With Chromium installed (/usr/bin/chromium), the page is opened headless: load → drawn, and one
branch switch. One JSON object per line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/ (whose storage.py would shadow the storage package)

from bench.storage import emit, generate, write_pi_file  # noqa: E402
from treechat.storage import open_catalog  # noqa: E402
from treechat.storage.base import EntryCursor  # noqa: E402
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent  # noqa: E402


def ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)


def run_child(argv: list[str]) -> tuple[float, str]:
    """Wall ms and stdout of a command that must succeed."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return ms_since(t0), proc.stdout


# Runs the real CLI and reports the child's own peak memory: VmHWM is per address space, unlike
# ru_maxrss, which Linux carries over exec from the parent (this process holds the generated session).
PEAK = ("import sys; from treechat.cli.main import main; code = main(sys.argv[1:]); "
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]; "
        "print(hwm[0] if hwm else 0, file=sys.stderr); sys.exit(code)")


def run_export(argv: list[str]) -> tuple[float, float | None]:
    """Wall ms and the child's peak RSS in MB (None where /proc is missing)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PEAK, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = ms_since(t0)
    if proc.returncode != 0:
        raise SystemExit(f"export failed: {proc.stderr.strip()}")
    kib = int(proc.stderr.strip().splitlines()[-1] or 0)
    return wall, round(kib / 1024, 1) if kib else None


async def in_process(home: Path, sid: str, out: Path) -> None:
    from treechat.export.html import export_html
    from treechat.export.html.render import Renderer

    catalog = await open_catalog("sqlite", home)
    storage = await catalog.open(sid)
    t0 = time.perf_counter()
    after, texts, count = None, [], 0
    while True:
        page = await storage.get_entries(EntryCursor(after_id=after, limit=2000))
        if not page:
            break
        count += len(page)
        after = page[-1].id
        texts += ["\n\n".join(b.text for b in e.message.content if isinstance(b, TextContent))
                  for e in page if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)]
    emit(bench="export_html.read", entries=count, ms=ms_since(t0))
    renderer = Renderer()
    t0 = time.perf_counter()
    for text in texts:
        renderer.markdown(text)
    emit(bench="export_html.markdown", replies=len(texts), chars=sum(map(len, texts)), ms=ms_since(t0))
    t0 = time.perf_counter()
    result = await export_html(storage, out)
    emit(bench="export_html.in_process", entries=result.entries, bytes=result.bytes, ms=ms_since(t0))
    await catalog.close()


def browser(page: Path, target: str) -> None:
    from tests.export.chromium import CHROMIUM, Chromium

    if not CHROMIUM.exists():
        emit(bench="export_html.browser", skipped=f"{CHROMIUM} missing")
        return
    with tempfile.TemporaryDirectory() as profile, Chromium(Path(profile), timeout=120) as b:
        t0 = time.perf_counter()
        b.open(page.as_uri())
        b.wait_for("document.documentElement.dataset.ready === '1'")
        ready = ms_since(t0)
        switch = b.eval(f"(() => {{ const s = performance.now(); location.hash = '#{target}';"
                        " window.dispatchEvent(new HashChangeEvent('hashchange')); return performance.now() - s; })()")
        heap = b.eval("performance.memory ? performance.memory.usedJSHeapSize : null")
        emit(bench="export_html.browser", ready_ms=ready, branch_switch_ms=round(switch, 1),
             js_heap_mb=round(heap / 1e6, 1) if heap else None, cards=b.eval("document.querySelectorAll('#main .card').length"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k entries instead of 100k")
    ap.add_argument("--size", type=int)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    size = args.size or (10_000 if args.quick else 100_000)
    emit(bench="machine", python=platform.python_version(), cpus=os.cpu_count(),
         load1=round(os.getloadavg()[0], 2))
    exe = [sys.executable, "-m", "treechat"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        entries, _ = generate(size)
        write_pi_file(work / "session.jsonl", "bench-export", entries)
        target = entries[len(entries) // 2].id
        del entries  # 100k live objects would make every GC pass below slower
        gc.collect()
        home = work / "home"
        wall, out = run_child([*exe, "--home", str(home), "import", str(work / "session.jsonl")])
        sid = out.strip()
        emit(bench="export_html.import", entries=size, ms=wall)
        page = work / "session.html"
        wall, rss = run_export(["--home", str(home), "export", sid, "--format", "html", "-o", str(page)])
        emit(bench="export_html", entries=size, ms=wall, bytes=page.stat().st_size,
             mb=round(page.stat().st_size / 1e6, 1), peak_rss_mb=rss)
        asyncio.run(in_process(home, sid, work / "again.html"))
        if not args.no_browser:
            browser(page, target)


if __name__ == "__main__":
    main()
