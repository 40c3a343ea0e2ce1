"""Storage benchmark: every available backend on generated sessions, and Pi side by side.

    python bench/storage.py [--quick] [--pi-dir /tmp/pibench] [--sizes 1000,10000,100000]

Prints one JSON object per measurement. Text is drawn from a ~9k-word Zipf-like vocabulary
(function words, tech words, a long tail, code identifiers, paths). Sessions have 50 branches and an active path of about
2k entries at 100k (size/50 per branch; every branch forks near the top of an earlier one).
Pi (`npm install @mariozechner/pi-coding-agent@0.73.1` in --pi-dir) is timed by a node script
written to a temp dir: SessionManager.open(file) + buildSessionContext() on the same session
saved as a Pi JSONL file. Budgets for sqlite at 100k are in issue 3.

Process to process (issue 14): each side starts a fresh process that opens the session file and
builds the context once (`pi_process`, `ours_process` per backend, median of 3 spawns), and
`import_process` times `python -m treechat import FILE` into a fresh SQLite home; `process_ratio`
and `import_ratio` compare them with Pi's process.

PostgreSQL (issue 25): `--database-url URL` names a server where the bench may create (and then
drop) a scratch database; the `postgres` backend is then measured like the others, search too.
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treechat.session.context import build_context  # noqa: E402
from treechat.storage import open_catalog  # noqa: E402
from treechat.storage.imports.records import read_records  # noqa: E402
from treechat.storage.model import ENTRY_TYPES, Entry, parse_entries_json  # noqa: E402

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


def _vocabulary(seed: int = 11) -> tuple[list[str], list[float]]:
    """Words with Zipf-like frequencies, like real chat about code: a few function words make
    up much of the text, tech words come next, and a long tail of rarer words, code identifiers
    and file paths — so a bench query matches as many entries as it would in a real archive
    (not, as with a 150-word vocabulary, a fifth of all of them)."""
    rng = random.Random(seed)
    onsets = "b c d f g h k l m n p r s t v z br ch cl dr fl gr kr pl pr sh st str th tr".split()
    vowels = "a e i o u ai ea ee ie io oa ou".split()
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "x", "nd", "st", "rk", "ng"]
    made: set[str] = set()
    while len(made) < 6000:
        made.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(rng.randint(1, 3))))
    tail = sorted(made)
    rng.shuffle(tail)
    stems = WORDS[30:] + tail[:400]
    idents: set[str] = set()
    while len(idents) < 1500:
        a, b = rng.choice(stems), rng.choice(stems)
        idents.add(f"{a}_{b}" if rng.random() < 0.5 else a + b.capitalize())
    paths: set[str] = set()
    exts = ["py", "ts", "rs", "go", "md", "json", "toml", "yaml"]
    while len(paths) < 800:
        paths.add(f"src/{rng.choice(stems)}/{rng.choice(stems)}.{rng.choice(exts)}")
    rest = tail + sorted(idents) + sorted(paths)
    rng.shuffle(rest)
    vocab = WORDS[:30] + WORDS[30:] + rest  # rank order: function words, tech words, the tail
    cum, total = [], 0.0
    for rank in range(len(vocab)):
        total += 1.0 / (rank + 2) ** 1.07
        cum.append(total)
    return vocab, cum


VOCAB, _CUM = _vocabulary()


def emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(VOCAB, cum_weights=_CUM, k=rng.randint(lo, hi)))


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


DATABASE_URL: str | None = None  # the scratch database's URL (--database-url)


async def catalog_of(kind: str, home: Path):
    return await open_catalog(kind, home, database_url=DATABASE_URL if kind == "postgres" else None)


async def bench_backend(kind: str, size: int, entries: list[Entry], leaf: str, pi_file: Path, work: Path) -> dict:
    home = work / kind
    home.mkdir()
    cat = await catalog_of(kind, home)
    t0 = time.perf_counter()
    header, records, report = read_records(pi_file, check_later=True)  # as `treechat import` reads
    storage, report = await cat.import_records(header, records, report)
    emit(bench="import", backend=kind, entries=size, ms=ms_since(t0), imported=report.entries)
    sid = storage.session_id
    result: dict = {}
    if kind != "memory":  # a cold catalog, as when the app starts (the OS file cache is warm)
        await cat.close()

    async def cold_open():
        nonlocal cat
        if kind != "memory":
            await cat.close()
            cat = await catalog_of(kind, home)
        s = await cat.open(sid)
        await s.get_metadata(), await s.get_session_stats(), await s.get_leaf_id()

    if kind != "memory":
        cat = await catalog_of(kind, home)
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


async def bench_search(sessions: int, per: int, work: Path, backend: str = "sqlite") -> None:
    home = work / f"search-{backend}"
    home.mkdir()
    cat = await catalog_of(backend, home)
    t0 = time.perf_counter()
    for i in range(sessions):
        entries, leaf = generate(per, branches=2, seed=1000 + i)
        await cat.import_session({"id": f"search-{i:04d}", "timestamp": SESSION_TS}, entries, leaf)
    emit(bench="search_setup", backend=backend, entries=sessions * per, sessions=sessions, ms=ms_since(t0))
    rng = random.Random(3)
    texts = [sentence(rng, 10, 30).split() for _ in range(50)]  # phrases that occur in the corpus
    def words(lo: int, hi: int) -> list[str]:  # 3+ characters: shorter ones are the "short" kind
        return [w for w in VOCAB[lo:hi] if len(w) >= 3]

    queries = [("common", rng.choice(words(30, 150))) for _ in range(10)]
    queries += [("mid", rng.choice(words(300, 2000))) for _ in range(10)]
    queries += [("rare", rng.choice(words(4000, len(VOCAB)))) for _ in range(10)]
    queries += [("phrase", '"{} {}"'.format(*tuple(t[i : i + 2]))) for t in texts[:10] for i in [rng.randrange(len(t) - 1)]]
    queries += [("role", f"{rng.choice(words(150, 1500))} role:user") for _ in range(10)]
    queries += [("two_words", f"{rng.choice(words(150, 1500))} {rng.choice(words(30, 300))}") for _ in range(10)]
    queries += [("code", w) for w in rng.sample([w for w in VOCAB if "_" in w or "/" in w or w != w.lower()], 10)]
    queries += [("missing", "zebra-not-there"), ("missing", "qqqxj"), ("short", "ok"), ("short", "zz")]
    times, hits = [], 0
    by_kind: dict[str, list[float]] = {}
    for kind, q in queries:
        t0 = time.perf_counter()
        found = await cat.search(q)
        ms = ms_since(t0)
        hits += len(found)
        times.append(ms)
        by_kind.setdefault(kind, []).append(ms)
    for kind, ts in by_kind.items():
        ts.sort()
        emit(bench="search_kind", backend=backend, kind=kind, queries=len(ts), p50_ms=round(statistics.median(ts), 3),
             p95_ms=ts[min(len(ts) - 1, int(len(ts) * 0.95))], max_ms=ts[-1])
    emit(bench="search", backend=backend, entries=sessions * per, sessions=sessions, queries=len(queries),
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


OURS_SCRIPT = """
import asyncio, sys
from pathlib import Path
from treechat.session.context import build_context
from treechat.storage import open_catalog

async def main():
    cat = await open_catalog(sys.argv[1], Path(sys.argv[2]))  # postgres: TREECHAT_DATABASE_URL
    s = await cat.open(sys.argv[3])
    leaf = await s.get_leaf_id()
    ctx = build_context(await s.get_path_to_root_or_compaction(leaf), await s.get_path_state(leaf))
    print(len(ctx.messages))
    await cat.close()

asyncio.run(main())
"""


def child_env() -> dict[str, str]:
    import os

    return {**os.environ, **({"TREECHAT_DATABASE_URL": DATABASE_URL} if DATABASE_URL else {})}


def spawn_ms(argv: list[str], runs: int = 3) -> tuple[float, str]:
    """Median wall time of `runs` fresh processes (spawn to exit), and the last one's stdout."""
    times, out = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=child_env())
        times.append(ms_since(t0))
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-500:])
        out = done.stdout
    return round(statistics.median(times), 3), out


def import_cli(pi_file: Path, home: Path, kind: str) -> float:
    """`python -m treechat import FILE` into `home`, spawn to exit, ms."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "treechat", "--home", str(home), "--storage", kind, "import",
                           str(pi_file), *(["--force"] if kind == "postgres" else [])],
                          capture_output=True, text=True, timeout=600, env=child_env())
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-500:])
    return ms_since(t0)


def bench_processes(size: int, pi_dir: Path, pi_file: Path, work: Path, kinds: list[str]) -> None:
    """Pi and us, process to process: open the session and build its context once; and our
    import of the same file into a fresh SQLite home."""
    entry = pi_dir / "node_modules/@mariozechner/pi-coding-agent/dist/index.js"
    node = shutil.which("node")
    pi_ms = None
    if entry.exists() and node is not None:
        script = work / "pi_once.mjs"
        script.write_text(PI_SCRIPT.replace("%s", json.dumps(entry.as_uri()), 1).replace("%d", "1", 1))
        copy = work / "pi-once.jsonl"
        shutil.copyfile(pi_file, copy)
        pi_ms, out = spawn_ms([node, str(script), str(copy)])
        emit(bench="pi_process", backend="pi", entries=size, ms=pi_ms, messages=json.loads(out)["messages"])
    import_times = []
    for i in range(3):
        home = work / f"import-{size}-{i}"
        import_times.append(import_cli(pi_file, home, "sqlite"))
        if i:
            shutil.rmtree(home)
    import_ms = round(statistics.median(import_times), 3)
    emit(bench="import_process", backend="sqlite", entries=size, ms=import_ms)
    if pi_ms:
        emit(bench="import_ratio", backend="sqlite", entries=size, pi_ms=pi_ms, import_ms=import_ms,
             times_pi=round(import_ms / pi_ms, 2))
    script = work / "ours_once.py"
    script.write_text(OURS_SCRIPT)
    for kind in kinds:
        home = work / f"import-{size}-0"
        if kind != "sqlite":
            home = work / f"proc-{kind}-{size}"
            import_cli(pi_file, home, kind)
        ms, out = spawn_ms([sys.executable, str(script), kind, str(home), f"bench-{size}"])
        emit(bench="ours_process", backend=kind, entries=size, ms=ms, messages=int(out.strip()))
        if pi_ms:
            emit(bench="process_ratio", backend=kind, entries=size, pi_ms=pi_ms, ours_ms=ms, ratio=round(pi_ms / ms, 2))


def available(kind: str) -> bool:
    if kind == "postgres" and DATABASE_URL is None:
        return False
    try:
        importlib.import_module(f"treechat.storage.{kind}" + (".catalog" if kind == "postgres" else ""))
        return True
    except ImportError:
        return False


def scratch_database(url: str) -> tuple[str, Callable[[], None]]:
    """A new database on the server `url` names: (its URL, a function that drops it)."""
    import os

    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"treechat_bench_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
        admin.execute(f"CREATE DATABASE {name}".encode())
    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    params["dbname"] = name

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())

    return make_conninfo("", **params), drop


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k only, small search corpus")
    ap.add_argument("--sizes", help="comma-separated session sizes (default 1000,10000,100000)")
    ap.add_argument("--pi-dir", type=Path, default=Path("/tmp/pibench"), help="where pi-coding-agent is installed")
    ap.add_argument("--backends", default="memory,jsonl,sqlite,postgres")
    ap.add_argument("--database-url", help="postgres: a server where a scratch database may be made (and dropped)")
    ap.add_argument("--no-process", action="store_true", help="skip the process-to-process runs")
    ap.add_argument("--no-search", action="store_true", help="skip the search corpus")
    args = ap.parse_args()
    global DATABASE_URL
    drop: Callable[[], None] | None = None
    if args.database_url:
        DATABASE_URL, drop = scratch_database(args.database_url)
    try:
        await run(args)
    finally:
        if drop is not None:
            drop()


async def run(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else ([1000, 10_000] if args.quick else [1000, 10_000, 100_000])
    backends = [b for b in args.backends.split(",") if available(b)]
    for b in set(args.backends.split(",")) - set(backends):
        emit(bench="skip", backend=b, note="no --database-url" if b == "postgres" and not DATABASE_URL
             else "backend does not import")
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
            if size >= 10_000 and not args.no_process:
                bench_processes(size, args.pi_dir, pi_file, work, [k for k in backends if k != "memory"])
            pi = run_pi(args.pi_dir, pi_file, work, 3 if size >= 100_000 else 7)
            if pi is None:
                emit(bench="pi_open_context", entries=size, note=f"skipped: no pi-coding-agent under {args.pi_dir} or no node")
                continue
            emit(bench="pi_open_context", backend="pi", entries=size, ms=round(pi["median"], 3), messages=pi["messages"])
            for kind, r in results.items():
                ours = r["open"] + r["context"]
                emit(bench="pi_ratio", backend=kind, entries=size, pi_ms=round(pi["median"], 3), ours_ms=round(ours, 3),
                     ratio=round(pi["median"] / ours, 1), same_messages=pi["messages"] == r["messages"])
        for backend in [b for b in ("sqlite", "postgres") if b in backends and not args.no_search]:
            await bench_search(*((100, 200) if args.quick else (1000, 200)), work, backend)


if __name__ == "__main__":
    asyncio.run(main())
