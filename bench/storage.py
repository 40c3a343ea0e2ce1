"""Storage benchmark: every available backend on generated sessions, and Pi side by side.

    python bench/storage.py [--quick] [--pi-dir /tmp/pibench] [--sizes 1000,10000,100000]

Prints one JSON object per measurement. Sessions have 50 branches and an active path of about
2k entries at 100k (size/50 per branch; every branch forks near the top of an earlier one).
Pi (`npm install @mariozechner/pi-coding-agent@0.73.1` in --pi-dir) is timed by a node script
written to a temp dir: SessionManager.open(file) + buildSessionContext() on the same session
saved as a Pi JSONL file. Budgets for sqlite at 100k are in issue 3.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.session.context import build_context  # noqa: E402
from storage import open_catalog  # noqa: E402
from storage.jsonl import read_session_file  # noqa: E402
from storage.model import ENTRY_TYPES, Entry, parse_entries_json  # noqa: E402

assert "message" in ENTRY_TYPES
WORDS = (
    "the a to of and in that is for it with as on be this by are or from at an not but have can all "
    "function return value error file path config test build server client request response cache "
    "index query table column database session branch tree leaf parent child entry message model "
    "token stream parse json yaml python rust typescript async await thread lock queue retry timeout "
    "compile link deploy docker kubernetes network socket header body status commit merge rebase "
    "refactor rename extract inline variable constant loop iterator generator closure lambda module"
).split()
SESSION_TS = "2026-01-01T00:00:00.000Z"


def emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def generate(size: int, branches: int = 50, seed: int = 7) -> tuple[list[Entry], str]:
    """`size` entries in `branches` chains; the last generated entry is the active leaf."""
    rng = random.Random(seed)
    per = max(1, size // branches)
    raw: list[dict] = []
    chains: list[list[str]] = []
    ms = 1_767_225_600_000
    n = 0
    for b in range(branches):
        count = per if b < branches - 1 else size - per * (branches - 1)
        parent = None
        if chains:  # fork near the top of an earlier branch, so paths stay about `per` long
            src = rng.choice(chains)
            parent = src[rng.randrange(0, max(1, min(len(src), per // 10)))]
        chain: list[str] = []
        for _ in range(count):
            eid = f"{n:08x}"
            n += 1
            ms += 1000
            iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
            base = {"id": eid, "parentId": parent, "timestamp": iso}
            k = len(chain) % 4
            if len(chain) % 97 == 5:
                raw.append({**base, "type": "model_change", "provider": "anthropic", "modelId": f"claude-{b % 3}"})
            elif k == 0:
                raw.append({**base, "type": "message", "message": {"role": "user", "content": sentence(rng, 5, 40), "timestamp": ms}})
            elif k == 1:
                usage = {"input": 1200, "output": 300, "cacheRead": 800, "cacheWrite": 0, "totalTokens": 2300,
                         "cost": {"input": 0.004, "output": 0.0045, "cacheRead": 0.0002, "cacheWrite": 0, "total": 0.0087}}
                content = [{"type": "text", "text": sentence(rng, 10, 60)},
                           {"type": "toolCall", "id": f"c{eid}", "name": "bash", "arguments": {"command": sentence(rng, 2, 6)}}]
                raw.append({**base, "type": "message", "message": {
                    "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
                    "model": "claude-sonnet", "usage": usage, "stopReason": "toolUse", "timestamp": ms}})
            elif k == 2:
                raw.append({**base, "type": "message", "message": {
                    "role": "toolResult", "toolCallId": f"c{eid}", "toolName": "bash",
                    "content": [{"type": "text", "text": sentence(rng, 5, 50)}], "isError": False, "timestamp": ms}})
            else:
                raw.append({**base, "type": "message", "message": {
                    "role": "assistant", "content": [{"type": "text", "text": sentence(rng, 10, 80)}],
                    "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet",
                    "usage": {"input": 1500, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1700,
                              "cost": {"input": 0.0045, "output": 0.003, "cacheRead": 0, "cacheWrite": 0, "total": 0.0075}},
                    "stopReason": "stop", "timestamp": ms}})
            chain.append(eid)
            parent = eid
        chains.append(chain)
    return parse_entries_json(json.dumps(raw)), raw[-1]["id"]


def write_pi_file(path: Path, session_id: str, entries: list[Entry]) -> None:
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": SESSION_TS, "cwd": "/bench"}
    lines = [json.dumps(header)] + [e.model_dump_json(by_alias=True, exclude_unset=True) for e in entries]
    path.write_text("\n".join(lines) + "\n")


def ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


async def timed(fn, repeat: int) -> float:
    """Median wall time of `repeat` calls, in ms."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await fn()
        times.append(ms_since(t0))
    return round(statistics.median(times), 3)


async def bench_backend(kind: str, size: int, entries: list[Entry], leaf: str, pi_file: Path, work: Path) -> dict:
    home = work / kind
    home.mkdir()
    cat = await open_catalog(kind, home)
    t0 = time.perf_counter()
    header, parsed, file_leaf, _ = read_session_file(pi_file)
    storage, report = await cat.import_session(header, parsed, file_leaf)
    emit(bench="import", backend=kind, entries=size, ms=ms_since(t0), imported=report.entries)
    sid = storage.session_id
    result: dict = {}
    if kind != "memory":  # a cold catalog, as when the app starts (the OS file cache is warm)
        await cat.close()

    async def cold_open():
        nonlocal cat
        if kind != "memory":
            await cat.close()
            cat = await open_catalog(kind, home)
        s = await cat.open(sid)
        await s.get_metadata(), await s.get_session_stats(), await s.get_leaf_id()

    if kind != "memory":
        cat = await open_catalog(kind, home)
    result["open"] = await timed(cold_open, 5 if size >= 100_000 and kind == "jsonl" else 21)
    emit(bench="open", backend=kind, entries=size, ms=result["open"])
    s = await cat.open(sid)
    assert await s.get_leaf_id() == leaf

    async def context():
        at = await s.get_leaf_id()
        path = await s.get_path_to_root_or_compaction(at)
        ctx = build_context(path, await s.get_path_state(at))
        result["messages"] = len(ctx.messages)

    result["context"] = await timed(context, 21)
    emit(bench="context", backend=kind, entries=size, ms=result["context"], messages=result["messages"])

    async def tree():
        rows, labels = await s.get_tree_rows(), await s.get_labels()
        assert len(rows) == size and isinstance(labels, dict)

    emit(bench="tree", backend=kind, entries=size, ms=await timed(tree, 5))

    times = []
    gen, _ = generate(400, branches=1, seed=size)
    parent = leaf
    for e in gen:
        e = e.model_copy(update={"id": "z" + e.id[1:], "parent_id": parent})
        t0 = time.perf_counter()
        await s.append_entry(e)
        times.append((time.perf_counter() - t0) * 1000)
        parent = e.id
    times.sort()
    emit(bench="append", backend=kind, entries=size, p50_ms=round(times[len(times) // 2], 3),
         p99_ms=round(times[int(len(times) * 0.99)], 3), n=len(times))
    await cat.close()
    return result


async def bench_search(sessions: int, per: int, work: Path) -> None:
    home = work / "search"
    home.mkdir()
    cat = await open_catalog("sqlite", home)
    t0 = time.perf_counter()
    for i in range(sessions):
        entries, leaf = generate(per, branches=2, seed=1000 + i)
        await cat.import_session({"id": f"search-{i:04d}", "timestamp": SESSION_TS}, entries, leaf)
    emit(bench="search_setup", backend="sqlite", entries=sessions * per, sessions=sessions, ms=ms_since(t0))
    rng = random.Random(3)
    queries = [rng.choice(WORDS[30:]) for _ in range(20)]
    queries += [f'"{rng.choice(WORDS[30:])} {rng.choice(WORDS[30:])}"' for _ in range(10)]
    queries += [f"{rng.choice(WORDS[30:])} role:user" for _ in range(10)]
    queries += ["zebra-not-there", "ok"]
    times, hits = [], 0
    for q in queries:
        t0 = time.perf_counter()
        hits += len(await cat.search(q))
        times.append(ms_since(t0))
    emit(bench="search", backend="sqlite", entries=sessions * per, sessions=sessions, queries=len(queries),
         p50_ms=round(statistics.median(times), 3), max_ms=max(times), hits=hits)
    await cat.close()


PI_SCRIPT = """
import { SessionManager } from %s;
const file = process.argv[2];
const runs = [];
let messages = 0;
for (let i = 0; i < %d; i++) {
  const t0 = performance.now();
  const sm = SessionManager.open(file);
  const ctx = sm.buildSessionContext();
  runs.push(performance.now() - t0);
  messages = ctx.messages.length;
}
runs.sort((a, b) => a - b);
console.log(JSON.stringify({ median: runs[Math.floor(runs.length / 2)], first: runs[0], messages }));
"""


def run_pi(pi_dir: Path, pi_file: Path, work: Path, runs: int) -> dict | None:
    entry = pi_dir / "node_modules/@mariozechner/pi-coding-agent/dist/index.js"
    node = shutil.which("node")
    if not entry.exists() or node is None:
        return None
    script = work / "pi_bench.mjs"
    script.write_text(PI_SCRIPT % (json.dumps(entry.as_uri()), runs))
    copy = work / "pi-copy.jsonl"  # Pi may rewrite a file it opens; keep ours pristine
    shutil.copyfile(pi_file, copy)
    out = subprocess.run([node, str(script), str(copy)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        emit(bench="pi", note="node failed", stderr=out.stderr[-500:])
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def available(kind: str) -> bool:
    try:
        importlib.import_module(f"storage.{kind}")
        return True
    except ImportError:
        return False


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k only, small search corpus")
    ap.add_argument("--sizes", help="comma-separated session sizes (default 1000,10000,100000)")
    ap.add_argument("--pi-dir", type=Path, default=Path("/tmp/pibench"), help="where pi-coding-agent is installed")
    ap.add_argument("--backends", default="memory,jsonl,sqlite")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else ([1000, 10_000] if args.quick else [1000, 10_000, 100_000])
    backends = [b for b in args.backends.split(",") if available(b)]
    for b in set(args.backends.split(",")) - set(backends):
        emit(bench="skip", backend=b, note="backend does not import")
    with tempfile.TemporaryDirectory(prefix="treechat-bench-") as tmp:
        work = Path(tmp)
        for size in sizes:
            entries, leaf = generate(size)
            pi_file = work / f"pi-{size}.jsonl"
            write_pi_file(pi_file, f"bench-{size}", entries)
            results = {}
            for kind in backends:
                run = work / f"{kind}-{size}"
                run.mkdir()
                results[kind] = await bench_backend(kind, size, entries, leaf, pi_file, run)
            pi = run_pi(args.pi_dir, pi_file, work, 3 if size >= 100_000 else 7)
            if pi is None:
                emit(bench="pi_open_context", entries=size, note=f"skipped: no pi-coding-agent under {args.pi_dir} or no node")
                continue
            emit(bench="pi_open_context", backend="pi", entries=size, ms=round(pi["median"], 3), messages=pi["messages"])
            for kind, r in results.items():
                ours = r["open"] + r["context"]
                emit(bench="pi_ratio", backend=kind, entries=size, pi_ms=round(pi["median"], 3), ours_ms=round(ours, 3),
                     ratio=round(pi["median"] / ours, 1), same_messages=pi["messages"] == r["messages"])
        if "sqlite" in backends:
            await bench_search(*((100, 200) if args.quick else (1000, 200)), work)


if __name__ == "__main__":
    asyncio.run(main())
