"""History of any size (issue 26): whole processes side by side with Pi, on generated sessions.

    .venv/bin/python bench/scale.py [--only startup,open,import,search] [--sizes 10000,100000] [--huge]
                                    [--pi-dir /work/peers/pi] [--runs 3] [--cache DIR]

Prints one JSON object per measurement (the first: the machine and its load average). Sessions are
generated as Pi files of 50 branches (bench/storage.py's vocabulary and shape) straight to disk, a
line at a time, into a cache folder outside the repository (`--cache`, default
~/.cache/treechat-bench), and reused by later runs. `--huge` adds 300k (import only) and 1M.

| bench | meaning |
|---|---|
| `startup` | `python -c pass`, `node -e 0`, `treechat --version`, and the `sessions`/`search` subcommands on an empty home: median wall ms of `--runs` spawns (alternating), `ratio` = ÷ `python -c pass` |
| `import` | `treechat import FILE` into a fresh home: wall and CPU (user+sys) seconds, peak RSS (MB), the largest WAL seen (sampled every 20 ms), `times_pi` = wall ÷ Pi's open+context process |
| `open_context` | process to process: Pi (`SessionManager.open` + `buildSessionContext`) and `treechat context SID` (SQLite, and JSONL up to 100k), alternating; wall s, CPU s, peak RSS MB, `vs_pi` |
| `open_context_inproc` | in one process: ours (catalog + open + path + state + `build_context`) against the floor (plain `sqlite3` reading the same path and `json.loads` of each row), median ms, `vs_floor` |
| `tree_read` | `get_tree_rows()` of the whole session on a freshly opened one, SQLite and JSONL, median ms |
| `search` | `treechat`'s catalog search at that size: normal queries (3+ characters) and two-letter ones, median ms, `short_vs_normal`; `more`: a two-letter query's "more…" 25k, 250k and 950k entries back, `more_vs_normal` |

Runs alternate between the sides being compared, so a burst of load hits both; compare ratios of
one run, never absolute times from different runs or machines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.storage import _CUM, PI_SCRIPT, SESSION_TS, VOCAB, emit  # noqa: E402

BRANCHES = 50
DEFAULT_PI = Path("/work/peers/pi")


def default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "treechat-bench"


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def machine() -> None:
    import platform

    emit(bench="machine", python=platform.python_version(), cpus=os.cpu_count(), load=list(map(lambda x: round(x, 2), os.getloadavg())))


# ------------------------------------------------------------------ generated sessions


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(VOCAB, cum_weights=_CUM, k=rng.randint(lo, hi)))


def generated(size: int, cache: Path) -> Path:
    """The Pi file of `size` entries in 50 branches (bench/storage.py's shape), made once."""
    path = cache / f"pi-{size}-b{BRANCHES}.jsonl"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    rng = random.Random(7)
    per = max(1, size // BRANCHES)
    chains: list[list[str]] = []
    ms = 1_767_225_600_000
    n = 0
    usage1 = {"input": 1200, "output": 300, "cacheRead": 800, "cacheWrite": 0, "totalTokens": 2300,
              "cost": {"input": 0.004, "output": 0.0045, "cacheRead": 0.0002, "cacheWrite": 0, "total": 0.0087}}
    usage2 = {"input": 1500, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1700,
              "cost": {"input": 0.0045, "output": 0.003, "cacheRead": 0, "cacheWrite": 0, "total": 0.0075}}
    with open(tmp, "w") as f:
        f.write(json.dumps({"type": "session", "version": 3, "id": f"bench-{size}", "timestamp": SESSION_TS,
                            "cwd": "/bench"}) + "\n")
        for b in range(BRANCHES):
            count = per if b < BRANCHES - 1 else size - per * (BRANCHES - 1)
            parent = None
            if chains:
                src = rng.choice(chains)
                parent = src[rng.randrange(0, max(1, min(len(src), per // 10)))]
            chain: list[str] = []
            for _ in range(count):
                eid = f"{n:08x}"
                n += 1
                ms += 1000
                iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
                base: dict[str, Any] = {"type": "message", "id": eid, "parentId": parent, "timestamp": iso}
                k = len(chain) % 4
                obj: dict[str, Any]
                if len(chain) % 97 == 5:
                    obj = {"type": "model_change", "id": eid, "parentId": parent, "timestamp": iso,
                           "provider": "anthropic", "modelId": f"claude-{b % 3}"}
                elif k == 0:
                    obj = {**base, "message": {"role": "user", "content": _sentence(rng, 5, 40), "timestamp": ms}}
                elif k == 1:
                    content = [{"type": "text", "text": _sentence(rng, 10, 60)},
                               {"type": "toolCall", "id": f"c{eid}", "name": "bash",
                                "arguments": {"command": _sentence(rng, 2, 6)}}]
                    obj = {**base, "message": {"role": "assistant", "content": content, "api": "anthropic-messages",
                                               "provider": "anthropic", "model": "claude-sonnet", "usage": usage1,
                                               "stopReason": "toolUse", "timestamp": ms}}
                elif k == 2:
                    obj = {**base, "message": {"role": "toolResult", "toolCallId": f"c{eid}", "toolName": "bash",
                                               "content": [{"type": "text", "text": _sentence(rng, 5, 50)}],
                                               "isError": False, "timestamp": ms}}
                else:
                    text = _sentence(rng, 10, 80)
                    if b == BRANCHES - 1 and len(chain) >= count - 4:
                        text += "\n\nLast line: ZQXBENCHLASTLINE."  # what the app benchmark looks for
                    obj = {**base, "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                                               "api": "anthropic-messages", "provider": "anthropic",
                                               "model": "claude-sonnet", "usage": usage2, "stopReason": "stop",
                                               "timestamp": ms}}
                f.write(json.dumps(obj, separators=(",", ":")) + "\n")
                chain.append(eid)
                parent = eid
            chains.append(chain)
    tmp.rename(path)
    return path


# ------------------------------------------------------------------ processes


def run_process(argv: list[str], *, stdout: int | None = subprocess.DEVNULL, watch: Path | None = None,
                timeout: float = 3600) -> dict:
    """Spawn to exit: wall s, CPU s (user+sys of the child), peak RSS MB (its own, from wait4),
    and, with `watch`, the largest size that file reached meanwhile (sampled every 20 ms)."""
    biggest = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            try:
                biggest[0] = max(biggest[0], watch.stat().st_size)  # type: ignore[union-attr]
            except OSError:
                pass

    sampler = threading.Thread(target=sample, daemon=True) if watch is not None else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    if sampler is not None:
        sampler.start()
    _, err = proc.communicate(timeout=timeout)  # (reaps the child: its rusage is in RUSAGE_CHILDREN)
    wall = time.perf_counter() - t0
    stop.set()
    if sampler is not None:
        sampler.join()
    return {"wall_s": round(wall, 3), "rc": proc.returncode, "stderr": err.decode(errors="replace")[-300:],
            "wal_mb": round(biggest[0] / 2**20, 1) if watch is not None else None}


def measured(argv: list[str], watch: Path | None = None) -> dict:
    """run_process in a child of its own, so that RUSAGE_CHILDREN there is this process's alone:
    `cpu_s` (user+sys) and `rss_mb` (peak RSS) of the measured process."""
    code = (f"import json,sys,resource;from pathlib import Path;sys.path.insert(0,{str(ROOT)!r});from bench.scale import run_process;"
            "w=sys.argv[2];r=run_process(json.loads(sys.argv[1]),watch=Path(w) if w else None);"
            "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
            "r.update(cpu_s=round(u.ru_utime+u.ru_stime,3),rss_mb=round(u.ru_maxrss/1024,1));print(json.dumps(r))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(argv), str(watch or "")],
                         capture_output=True, text=True, timeout=7200)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-800:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["rc"] != 0:
        raise RuntimeError(f"{argv[:6]} failed: {result['stderr']}")
    return result


def treechat(home: Path, *args: str, storage: str = "sqlite") -> list[str]:
    return [sys.executable, "-m", "treechat", "--home", str(home), "--storage", storage, *args]


def pi_script(pi_dir: Path, work: Path) -> Path | None:
    entry = pi_dir / "node_modules/@mariozechner/pi-coding-agent/dist/index.js"
    if not entry.exists() or shutil.which("node") is None:
        return None
    script = work / "pi_once.mjs"
    script.write_text(PI_SCRIPT.replace("%s", json.dumps(entry.as_uri()), 1).replace("%d", "1", 1))
    return script


def median_of(runs: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def summary(runs: list[dict]) -> dict:
    return {"wall_s": median_of(runs, "wall_s"), "cpu_s": median_of(runs, "cpu_s"),
            "rss_mb": max(r["rss_mb"] for r in runs), "runs_s": [r["wall_s"] for r in runs]}


# ------------------------------------------------------------------ startup


def bench_startup(runs: int, work: Path) -> None:
    home = work / "empty-home"
    home.mkdir()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "treechat --version": [sys.executable, "-m", "treechat", "--version"],
        "treechat sessions": treechat(home, "sessions"),
        "treechat search": treechat(home, "search", "needle"),
    }
    if shutil.which("node"):
        cases["node -e 0"] = [shutil.which("node") or "node", "-e", "0"]
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs + 1):  # alternating; the first round warms the OS caches and is dropped
        for name, argv in cases.items():
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times["python -c pass"][1:])
    for name, ts in times.items():
        med = statistics.median(ts[1:])
        emit(bench="startup", what=name, ms=round(med * 1000, 1), ratio=round(med / floor, 2), load1=load1())


# ------------------------------------------------------------------ import, open + context


def bench_import(size: int, file: Path, pi: dict | None, runs: int, work: Path) -> Path:
    """Import `runs` times into fresh homes; the first home is kept for the reads."""
    results = []
    keep = work / f"home-{size}"
    for i in range(runs):
        home = keep if i == 0 else work / f"home-{size}-{i}"
        home.mkdir()
        results.append(measured(treechat(home, "import", str(file)), watch=home / "treechat.db-wal"))
        if i:
            shutil.rmtree(home)
    fig = summary(results)
    fig["wal_mb"] = max(r["wal_mb"] or 0 for r in results)
    if pi:
        fig["times_pi"] = round(fig["wall_s"] / pi["wall_s"], 2)
        fig["cpu_times_pi"] = round(fig["cpu_s"] / pi["cpu_s"], 2)
    emit(bench="import", entries=size, file_mb=round(file.stat().st_size / 2**20, 1), **fig, load1=load1())
    return keep


def jsonl_home(size: int, file: Path, work: Path) -> Path:
    """A JSONL home holding the session (imported as a user would)."""
    jhome = work / f"jsonl-{size}"
    if not jhome.exists():
        jhome.mkdir()
        subprocess.run(treechat(jhome, "import", str(file), storage="jsonl"), check=True, capture_output=True)
    return jhome


def bench_open_context(size: int, file: Path, home: Path, script: Path | None, runs: int, work: Path,
                       jsonl: bool) -> dict | None:
    sid = f"bench-{size}"
    cases: dict[str, list[str]] = {}
    if script is not None:
        copy = work / f"pi-copy-{size}.jsonl"  # Pi may rewrite a file it opens
        shutil.copyfile(file, copy)
        cases["pi"] = ["node", "--max-old-space-size=8192", str(script), str(copy)]
    cases["sqlite"] = treechat(home, "context", sid)
    if jsonl:
        jhome = jsonl_home(size, file, work)
        cases["jsonl"] = treechat(jhome, "context", sid, storage="jsonl")
    got: dict[str, list[dict]] = {k: [] for k in cases}
    failed: dict[str, str] = {}
    for _ in range(runs):
        for name, argv in cases.items():
            if name in failed:
                continue
            try:
                got[name].append(measured(argv))
            except RuntimeError as err:
                failed[name] = str(err)[-200:]
    pi = summary(got["pi"]) if got.get("pi") else None
    for name in cases:
        if name in failed:
            emit(bench="open_context", side=name, entries=size, failed=failed[name], load1=load1())
            continue
        fig = summary(got[name])
        if pi and name != "pi":
            fig["vs_pi"] = round(pi["wall_s"] / fig["wall_s"], 2)
        emit(bench="open_context", side=name, entries=size, **fig, load1=load1())
    return pi


INPROC = r"""
import asyncio, json, sqlite3, statistics, sys, time
from pathlib import Path
from treechat.session.context import build_context
from treechat.storage import open_catalog
from treechat.storage.sqlite.storage import PATH_SQL, _locate

home, sid, runs, kind = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]

def floor():
    c = sqlite3.connect(home / "treechat.db")
    leaf = c.execute("SELECT active_leaf_id FROM sessions WHERE id=?", (sid,)).fetchone()[0]
    _, branch, depth, ctx, *_ = _locate(c, sid, leaf)
    rows = [json.loads(p) for (p,) in c.execute(PATH_SQL, (branch, depth, ctx))]
    c.close()
    return len(rows)

async def ours():
    cat = await open_catalog(kind, home)
    s = await cat.open(sid)
    leaf = await s.get_leaf_id()
    ctx = build_context(await s.get_path_to_root_or_compaction(leaf), await s.get_path_state(leaf))
    await cat.close()
    return len(ctx.messages)

TREE_S = []

async def tree():
    cat = await open_catalog(kind, home)
    s = await cat.open(sid)
    await s.get_leaf_id()
    t0 = time.perf_counter()
    n = len(await s.get_tree_rows())
    TREE_S.append(time.perf_counter() - t0)
    await cat.close()
    return n

async def main():
    out = {}
    sides = [(n, f) for n, f in (("floor", floor), ("ours", ours), ("tree", tree)) if n != "floor" or kind == "sqlite"]
    times = {n: [] for n, _ in sides}
    for _ in range(runs):  # alternating, so a burst of load hits every side
        for name, fn in sides:
            t0 = time.perf_counter()
            r = fn()
            if asyncio.iscoroutine(r):
                r = await r
            times[name].append((time.perf_counter() - t0) * 1000)
            out[name + "_n"] = r
    times["tree"] = [t * 1000 for t in TREE_S]  # get_tree_rows alone, on a freshly opened session
    for name, ts in times.items():
        out[name] = round(statistics.median(ts), 2)
    print(json.dumps(out))

asyncio.run(main())
"""


def bench_inproc(size: int, home: Path, file: Path, runs: int, work: Path, jsonl: bool) -> None:
    script = work / "inproc.py"
    script.write_text(INPROC)
    sid = f"bench-{size}"
    out = subprocess.run([sys.executable, str(script), str(home), sid, str(runs), "sqlite"], capture_output=True,
                         text=True, check=True)
    r = json.loads(out.stdout)
    emit(bench="open_context_inproc", entries=size, ours_ms=r["ours"], floor_ms=r["floor"],
         vs_floor=round(r["ours"] / r["floor"], 2), messages=r["ours_n"], path_rows=r["floor_n"], load1=load1())
    tree = {"sqlite_ms": r["tree"]}
    if jsonl:
        jhome = jsonl_home(size, file, work)
        out = subprocess.run([sys.executable, str(script), str(jhome), sid, str(runs), "jsonl"], capture_output=True,
                             text=True, check=True)
        tree["jsonl_ms"] = json.loads(out.stdout)["tree"]
        tree["sqlite_vs_jsonl"] = round(tree["sqlite_ms"] / tree["jsonl_ms"], 2)
    emit(bench="tree_read", entries=size, **tree, load1=load1())


SEARCH = r"""
import asyncio, json, statistics, sys, time
from pathlib import Path
from treechat.storage import open_catalog

async def main():
    cat = await open_catalog("sqlite", Path(sys.argv[1]))
    out = {}
    for kind, queries in (("normal", ["function", "session branch", "merge", "src/", '"the value"', "timeout role:user"]),
                          ("short", ["ok", "zz", "is", "py", "a"])):
        ts, hits = [], 0
        for q in queries * 2:
            t0 = time.perf_counter()
            hits += len(await cat.search(q, limit=20))
            ts.append((time.perf_counter() - t0) * 1000)
        out[kind] = {"p50_ms": round(statistics.median(ts), 2), "max_ms": round(max(ts), 2), "hits": hits}
    ts, hits = [], 0  # "more…": the next window of a short query, near the top and deep down
    for q in ["ok", "zz", "py"]:
        for further in (25_000, 250_000, 950_000):
            t0 = time.perf_counter()
            hits += len(await cat.search(q, limit=20, further=further))
            ts.append((time.perf_counter() - t0) * 1000)
    out["more"] = {"p50_ms": round(statistics.median(ts), 2), "max_ms": round(max(ts), 2), "hits": hits}
    await cat.close()
    print(json.dumps(out))

asyncio.run(main())
"""


def bench_search(size: int, home: Path, work: Path) -> None:
    script = work / "search.py"
    script.write_text(SEARCH)
    out = subprocess.run([sys.executable, str(script), str(home)], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    normal = max(r["normal"]["p50_ms"], 0.01)
    emit(bench="search", entries=size, normal=r["normal"], short=r["short"], more=r["more"],
         short_vs_normal=round(r["short"]["p50_ms"] / normal, 2), more_vs_normal=round(r["more"]["p50_ms"] / normal, 2),
         load1=load1())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="startup,import,open,search")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--huge", action="store_true", help="also 300k (import) and 1M entries (everything)")
    ap.add_argument("--pi-dir", type=Path, default=DEFAULT_PI)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--keep", type=Path, help="keep the imported homes here (for bench/tui.py --only huge)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.huge:
        sizes += [300_000, 1_000_000]
    machine()
    with tempfile.TemporaryDirectory(prefix="treechat-scale-", dir=args.keep) as tmp:
        work = Path(tmp)
        if "startup" in only:
            bench_startup(max(args.runs, 5), work)
        script = pi_script(args.pi_dir, work)
        if script is None:
            emit(bench="pi", note=f"skipped: no pi-coding-agent under {args.pi_dir} or no node")
        for size in sizes:
            file = generated(size, args.cache)
            reads = size != 300_000  # 300k: the import's memory budget only
            runs = 1 if size >= 300_000 else args.runs
            pi = None
            home = work / f"home-{size}"
            if reads and "open" in only:
                # Pi first, on its own (no home yet): its figure is what the import is compared with
                pi_runs = []
                if script is not None:
                    copy = work / f"pi-first-{size}.jsonl"
                    shutil.copyfile(file, copy)
                    for _ in range(runs):
                        try:
                            pi_runs.append(measured(["node", "--max-old-space-size=8192", str(script), str(copy)]))
                        except RuntimeError as err:
                            emit(bench="open_context", side="pi", entries=size, failed=str(err)[-200:])
                            break
                    pi = summary(pi_runs) if pi_runs else None
            if {"import", "open", "search"} & only:
                home = bench_import(size, file, pi, runs if "import" in only else 1, work)
            if reads and "open" in only:
                bench_open_context(size, file, home, script, runs, work, jsonl=size <= 100_000 or args.huge)
                bench_inproc(size, home, file, 3 if size >= 1_000_000 else 7, work, jsonl=size <= 100_000)
            if reads and "search" in only:
                bench_search(size, home, work)
            if home.exists() and not args.keep:
                shutil.rmtree(home)


if __name__ == "__main__":
    main()
