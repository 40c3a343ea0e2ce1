"""psycopg 3 (async, psycopg_pool) against asyncpg, on this machine, for what treechat does.

    python bench/pg_drivers.py --url postgresql:///postgres?host=/tmp/sock&port=5432

Creates a scratch database, the treechat schema, and a 2,000-entry path; then, per driver:
`connect` (a new connection), `append` (the statements of one append, in one transaction,
p50/p99 over 400; `psycopg-pipeline`: the same in pipeline mode, two round trips, as the storage
does it) and `open_context` (a pooled connection: the session row, the path state and the 2,000
payloads of the path: what opening a session and building its context read). One JSON line per
figure, every driver twice. The scratch database is dropped at the end. Needs both drivers
(asyncpg is not a dependency: `pip install asyncpg` to run this).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCHEMA = (Path(__file__).resolve().parents[1] / "storage/postgres/migrations/001_initial.sql").read_text()
PAYLOAD = json.dumps({"type": "message", "message": {"role": "assistant", "content": [{"type": "text",
                      "text": "word " * 80}]}})
PATH = 2000
COUNTER = iter(range(10**9))  # append ids, unique across drivers and rounds


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


# The statements of one append (storage/postgres/storage.py does these, in this order).
LOCK = "SELECT active_leaf_id FROM sessions WHERE id = $1 FOR UPDATE"
LOCATE = ("SELECT e.entry_seq, m.branch_id, m.depth, m.ctx_start_depth, m.message_count FROM session_entries e"
          " LEFT JOIN entry_materialized m ON m.entry_seq = e.entry_seq WHERE e.session_id = $1 AND e.id = $2")
PROBE = "SELECT 1 FROM branch_entries WHERE branch_id = $1 AND depth = $2"
ENTRY = ("INSERT INTO session_entries (entry_seq, session_id, id, parent_id, type, role, timestamp, preview, payload)"
         " VALUES (nextval('treechat_entry_seq'), $1, $2, $3, 'message', 'assistant', '2026', 'word', $4)"
         " RETURNING entry_seq")
MEMBER = "INSERT INTO branch_entries (branch_id, depth, entry_seq) VALUES ($1, $2, $3)"
MAT = ("INSERT INTO entry_materialized (entry_seq, branch_id, depth, ctx_start_depth, message_count, input_tokens,"
       " output_tokens, cache_read_tokens, cache_write_tokens, cost_total, context_tokens, thinking_level)"
       " VALUES ($1, $2, $3, 1, $4, 0, 0, 0, 0, 0, 0, 'off')")
LEAF = "UPDATE sessions SET active_leaf_id = $1 WHERE id = $2"
SEARCH = "INSERT INTO entry_search (entry_seq, session_id, text) VALUES ($1, $2, $3)"
STATS = "UPDATE session_materialized SET entry_count = entry_count + 1 WHERE session_id = $1"
NOTIFY = "SELECT pg_notify('treechat', $1)"
READ_PATH = ("SELECT e.payload FROM branch_entries be JOIN session_entries e ON e.entry_seq = be.entry_seq"
             " WHERE be.branch_id = $1 AND be.depth <= $2 ORDER BY be.depth")


def pct(times: list[float], q: float) -> float:
    times = sorted(times)
    return round(times[min(len(times) - 1, int(len(times) * q))], 3)


async def seed(conn: Any) -> int:
    """A session with a PATH-entry chain on one branch; returns the branch id."""
    await conn.execute("INSERT INTO sessions (id, created_at) VALUES ('s', '2026')")
    await conn.execute("INSERT INTO session_materialized (session_id, modified_at, modified_ms) VALUES ('s', '', 0)")
    await conn.execute("INSERT INTO branches VALUES (1, 's', NULL, 0)")
    for d in range(1, PATH + 1):
        seq = await conn.fetchval(ENTRY, "s", f"e{d}", f"e{d - 1}" if d > 1 else None, PAYLOAD)
        await conn.execute(MEMBER, 1, d, seq)
        await conn.execute(MAT, seq, 1, d, d)
    await conn.execute("UPDATE sessions SET active_leaf_id = $1 WHERE id = 's'", f"e{PATH}")
    return 1


class AsyncpgSide:
    name = "asyncpg"

    def __init__(self, url: str) -> None:
        self.url = url

    async def connect(self) -> Any:
        import asyncpg  # type: ignore[import-not-found]  # optional: only this comparison needs it (not a test dependency)

        return await asyncpg.connect(self.url)

    async def pool(self) -> Any:
        import asyncpg

        return await asyncpg.create_pool(self.url, min_size=1, max_size=2)

    async def append(self, pool: Any, n: int, parent: str) -> None:
        async with pool.acquire() as c, c.transaction():
            await c.fetchrow(LOCK, "s")
            row = await c.fetchrow(LOCATE, "s", parent)
            await c.fetchval(PROBE, row[1], row[2] + 1)
            seq = await c.fetchval(ENTRY, "s", f"x{n}", parent, PAYLOAD)
            await c.execute(MEMBER, 1, 10 * PATH + n, seq)
            await c.execute(MAT, seq, 1, row[2] + 1, row[4] + 1)
            await c.execute(LEAF, f"x{n}", "s")
            await c.execute(SEARCH, seq, "s", "word " * 80)
            await c.execute(STATS, "s")
            await c.fetchval(NOTIFY, "s")

    async def open_context(self, pool: Any) -> int:
        async with pool.acquire() as c:
            leaf = await c.fetchval("SELECT active_leaf_id FROM sessions WHERE id = $1", "s")
            row = await c.fetchrow(LOCATE, "s", leaf)
            rows = await c.fetch(READ_PATH, row[1], row[2])
            return len(rows)


class PsycopgSide:
    name = "psycopg"

    def __init__(self, url: str) -> None:
        self.url = url

    @staticmethod
    def _q(sql: str) -> str:
        import re

        return re.sub(r"\$\d+", "%s", sql)

    async def connect(self) -> Any:
        import psycopg

        return await psycopg.AsyncConnection.connect(self.url, autocommit=True)

    async def pool(self) -> Any:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(self.url, min_size=1, max_size=2, open=False, kwargs={"autocommit": True})
        await pool.open(wait=True)
        return pool

    async def append(self, pool: Any, n: int, parent: str) -> None:
        q = self._q
        async with pool.connection() as c, c.transaction():
            await c.execute(q(LOCK), ("s",))
            row = await (await c.execute(q(LOCATE), ("s", parent))).fetchone()
            await c.execute(q(PROBE), (row[1], row[2] + 1))
            seq = (await (await c.execute(q(ENTRY), ("s", f"x{n}", parent, PAYLOAD))).fetchone())[0]
            await c.execute(q(MEMBER), (1, 10 * PATH + n, seq))
            await c.execute(q(MAT), (seq, 1, row[2] + 1, row[4] + 1))
            await c.execute(q(LEAF), (f"x{n}", "s"))
            await c.execute(q(SEARCH), (seq, "s", "word " * 80))
            await c.execute(q(STATS), ("s",))
            await c.execute(q(NOTIFY), ("s",))

    async def open_context(self, pool: Any) -> int:
        q = self._q
        async with pool.connection() as c:
            leaf = (await (await c.execute(q("SELECT active_leaf_id FROM sessions WHERE id = $1"), ("s",))).fetchone())[0]
            row = await (await c.execute(q(LOCATE), ("s", leaf))).fetchone()
            cur = c.cursor(binary=True)  # as the storage reads (storage/postgres/storage.py fetch_all)
            await cur.execute(q(READ_PATH), (row[1], row[2]), prepare=True)
            return len(await cur.fetchall())


class PsycopgPipelineSide(PsycopgSide):
    """psycopg in pipeline mode: the lookups in one round trip, every write and COMMIT in another
    (the writes use currval() instead of waiting for RETURNING)."""

    name = "psycopg-pipeline"

    async def append(self, pool: Any, n: int, parent: str) -> None:
        q = self._q
        cur_seq = "currval('treechat_entry_seq')"
        async with pool.connection() as c:
            async with c.pipeline() as p:
                await c.execute("BEGIN")
                await c.execute(q(LOCK), ("s",))
                cur = await c.execute(q(LOCATE), ("s", parent))
                await p.sync()
                row = await cur.fetchone()
            async with c.pipeline():
                await c.execute(q(PROBE), (row[1], row[2] + 1))
                await c.execute(q(ENTRY), ("s", f"x{n}", parent, PAYLOAD))
                await c.execute(q(MEMBER.replace("$3", cur_seq)), (1, 10 * PATH + n))
                await c.execute(q(MAT.replace("$1", cur_seq).replace("$2", "$1").replace("$3", "$2")
                                  .replace("$4", "$3")), (1, row[2] + 1, row[4] + 1))
                await c.execute(q(LEAF), (f"x{n}", "s"))
                await c.execute(q(SEARCH.replace("$1", cur_seq).replace("$2", "$1").replace("$3", "$2")),
                                ("s", "word " * 80))
                await c.execute(q(STATS), ("s",))
                await c.execute(q(NOTIFY), ("s",))
                await c.execute("COMMIT")


async def timed(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def run(side: Any, url: str) -> None:
    conns = []
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        conns.append(await side.connect())
        times.append((time.perf_counter() - t0) * 1000)
    for c in conns:
        await c.close()
    emit(bench="connect", driver=side.name, p50_ms=round(statistics.median(times), 3), n=len(times))
    pool = await side.pool()
    await side.open_context(pool)  # warm: statement caches, the OS cache
    times = await timed(lambda: side.open_context(pool), 50)
    emit(bench="open_context", driver=side.name, entries=PATH, p50_ms=round(statistics.median(times), 3),
         p99_ms=pct(times, 0.99), n=len(times))
    async def one() -> None:
        await side.append(pool, next(COUNTER), f"e{PATH}")

    await timed(one, 20)
    times = await timed(one, 400)
    emit(bench="append", driver=side.name, p50_ms=round(statistics.median(times), 3), p99_ms=pct(times, 0.99),
         n=len(times))
    await pool.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="a server where a scratch database may be created")
    args = ap.parse_args()
    import asyncpg

    admin = await asyncpg.connect(args.url)
    await admin.execute("DROP DATABASE IF EXISTS treechat_driver_bench")
    await admin.execute("CREATE DATABASE treechat_driver_bench")
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(args.url)
    url = urlunsplit((parts.scheme, parts.netloc, "/treechat_driver_bench", parts.query, ""))
    try:
        conn = await asyncpg.connect(url)
        await conn.execute(SCHEMA)
        await seed(conn)
        await conn.close()
        for _ in range(2):  # twice, alternating: the second round is the one to read
            for side in (AsyncpgSide(url), PsycopgSide(url), PsycopgPipelineSide(url)):
                await run(side, url)
    finally:
        await admin.execute("DROP DATABASE IF EXISTS treechat_driver_bench WITH (FORCE)")
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
