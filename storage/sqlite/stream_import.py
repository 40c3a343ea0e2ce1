"""A session file imported in batches: memory bounded whatever its size, the WAL kept small.

`bulk.py` loads a session in one transaction from records held in memory: right for a fork or a
small file, but a 1M-entry file took 4.7 GB and grew the WAL to 2.7 GB. Here the file is planned
in one pass (`stream_scan.plan_file`) and then read again a batch at a time; each batch is one
transaction holding its entries with everything derived from them (branch segments, path state,
labels, search text), the same values `bulk.py` and an append compute.

All or nothing, still: until the last batch commits, the session row names the importing process
(`import_pid`, migration 007) and has no `session_materialized` row, so nothing lists, finds or
opens it; the last batch writes that row and clears the mark. If the import fails the batches are
deleted; if the process dies, the next catalog opened on the database deletes them
(`drop_abandoned`). A `--force` import replacing a session keeps everything in one transaction
instead (the old session stays until the new one is whole), still a batch in memory at a time;
so does a file of one batch (its pages then go to the WAL once, as with `bulk.py`). At the end
the WAL is checkpointed and cut to nothing when no reader is in it.

Between batches the WAL is checkpointed on the importing connection, so it restarts from its
beginning instead of growing with the file. While SQLite indexes a batch's text (most of the
work, without the GIL) the next batch is read and validated on another thread. A file of more
than one batch is indexed in the bulk search index, whose segments are never merged (fts.py).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable

from ..base import ImportReport
from ..imports.stream_scan import FilePlan
from ..model_lite import ms_to_iso
from ..sql import rows
from . import fts, inserts
from .bulk import _INSERT_SEARCH_JSON
from .db import Database
from .storage import UPSERT_LABEL
from .stream_reader import Batch, StreamReader

Progress = Callable[[float], None]  # a share of the whole import done (all calls add up to 1.0)
BATCH = 8192
CHECKPOINT_BYTES = 12 * 2**20  # lines + search text stored since the last checkpoint: ~50 MB of WAL
STREAM_CACHE_KIB = 32 * 1024
WAL_LIMIT = 64 * 2**20  # journal_size_limit: the WAL file is cut back to this after a checkpoint
PLAN_SHARE = 0.2  # of the progress bar: the first pass (the second takes the rest)
_INSERT_BULK_JSON = _INSERT_SEARCH_JSON.replace("entry_search", fts.BULK)
# The bulk index gets a segment per statement that writes to it, and a search looks up each term
# in every segment: at 1M entries a normal query took 13 ms with one segment, 20 ms with 31 and
# ~46 ms with 123 (a batch each). So the search text of SEARCH_BATCHES batches is written in one
# statement (every 2nd batch, and the last): 62 segments at 1M, 7 at 100k. Each batch more held
# costs ~30 MB of memory (FTS5's pending index data; the bulk index's hashsize, 16 MiB, holds two
# batches'): 162 / 193 / 229 MB of RSS at 100k for 1 / 2 / 3.
SEARCH_BATCHES = 2



class ImportStopped(Exception):
    """The import was asked to stop between two batches (Ctrl+C); nothing of it is kept."""


def _store(c: sqlite3.Connection, b: Batch, search_sql: str, texts: list[tuple[int, str]]) -> None:
    """One batch (inside a transaction): search text first — SQLite tokenizes it without the GIL
    while the next batch is read — then the rows the reader built. `texts`: (first rowid, JSON
    array) of the batches whose search text this transaction writes (none, or this one and the
    ones held before it)."""
    if texts:
        c.execute(search_sql, _joined(texts))
    c.executemany(inserts.INSERT_ENTRY, b.entries)
    c.executemany(inserts.INSERT_BRANCH, b.branches)
    c.executemany(inserts.INSERT_BRANCH_ENTRY, b.members)
    c.executemany(inserts.INSERT_MATERIALIZED, b.mats)
    for sid, target, label, seq in b.labels:
        if label:
            c.execute(UPSERT_LABEL, (sid, target, label, seq, seq))
        else:
            c.execute("DELETE FROM labels WHERE session_id=? AND target_id=?", (sid, target))


_RESERVED = "\x00reserved"  # the placeholder rows that hold an import's ranges (never shown: see _reserve)


def _reserve(c: sqlite3.Connection, sid: str, entries: int) -> tuple[int, int]:
    """(first entry_seq, first branch_id) of this import's ranges: a placeholder entry and branch
    of the session at their ends, so another writer's next numbers come after them (SQLite gives
    max + 1). Deleted when the import ends; the session is invisible until then."""
    seq = c.execute("SELECT coalesce(max(entry_seq), 0) + 1 FROM session_entries").fetchone()[0]
    branch = c.execute("SELECT coalesce(max(branch_id), 0) + 1 FROM branches").fetchone()[0]
    c.execute("INSERT INTO session_entries (entry_seq, session_id, id, type, timestamp, payload)"
              " VALUES (?, ?, ?, 'leaf', '', '{}')", (seq + entries + 1, sid, _RESERVED))
    c.execute(inserts.INSERT_BRANCH, (branch + entries + 2, sid, None, 0))
    return seq, branch


def _joined(texts: list[tuple[int, str]]) -> tuple[int, str]:
    """Held batches' search texts as one statement's (first rowid, JSON array): FTS5 writes a
    segment at the end of every INSERT … SELECT (its statement savepoint), not only at COMMIT.
    The batches' rowids follow each other (every entry of a batch has one, '' for no text)."""
    if len(texts) == 1:
        return texts[0]
    inner = [array[1:-1] for _, array in texts if array != "[]"]
    return texts[0][0], "[" + ",".join(inner) + "]"


def _finish(c: sqlite3.Connection, sid: str, created: str, reader: StreamReader, leaf: str | None, ends: tuple[int, int],
            bulk: bool, texts: list[tuple[int, str]]) -> None:
    """The last batch's transaction: the search text still held is written, the placeholders go,
    the session becomes visible, whole."""
    if texts:
        c.execute(_INSERT_BULK_JSON, _joined(texts))
    c.execute("DELETE FROM session_entries WHERE entry_seq=? AND id=?", (ends[0], _RESERVED))
    c.execute("DELETE FROM branches WHERE branch_id=?", (ends[1],))
    if not bulk:
        fts.tidy_level0(c)  # a file of one batch went to the index appends use
    newest = reader.newest
    modified_at = ms_to_iso(newest) if newest is not None else created
    modified_ms = newest if newest is not None else rows.iso_ms_or_zero(created)
    c.execute("INSERT INTO session_materialized (session_id, modified_at, modified_ms, message_ms) VALUES (?,?,?,?)",
              (sid, modified_at, modified_ms, newest))
    assignments = ", ".join(f"{f}=?" for f in rows.STATS_FIELDS)
    c.execute(f"UPDATE session_materialized SET {assignments}, name=?, first_message=? WHERE session_id=?",
              (*rows.stats_values(reader.stats.stats()), reader.name, reader.first, sid))
    c.execute("UPDATE sessions SET active_leaf_id=?, import_pid=NULL WHERE id=?", (leaf, sid))


def _checkpoint(c: sqlite3.Connection) -> None:
    """Copy the WAL into the database (PASSIVE: never waits for a reader) so the next batch's
    transaction starts the WAL again from its beginning."""
    try:
        c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        pass  # a checkpoint on another connection is under way: the next one catches up


async def import_plan(
    db: Database,
    plan: FilePlan,
    *,
    insert_session: Callable[[sqlite3.Connection, str, str, str, int | None], None],
    delete_session: Callable[[sqlite3.Connection, str], None],
    replace: bool = False,
    on_progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    batch: int | None = None,
) -> tuple[str, int, ImportReport]:
    """Store the planned file as a session: (session id, its last entry_seq, report)."""
    header, report = plan.header, plan.report
    sid: str = header["id"]
    stamp, where = header.get("timestamp"), header.get("cwd")
    created: str = stamp if isinstance(stamp, str) else ms_to_iso(0)
    cwd: str = where if isinstance(where, str) else ""
    loop = asyncio.get_running_loop()
    advance = on_progress or (lambda part: None)
    advance(PLAN_SHARE)
    shown = 0.0
    written = 0
    held: list[tuple[int, str]] = []  # search text of batches stored without it (SEARCH_BATCHES)

    def setup(c: sqlite3.Connection) -> int:
        cache = int(c.execute("PRAGMA cache_size").fetchone()[0])
        c.execute(f"PRAGMA cache_size = {-STREAM_CACHE_KIB}")
        c.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
        return cache

    def begin(c: sqlite3.Connection, pid: int | None) -> tuple[int, int]:
        if replace:
            delete_session(c, sid)
        insert_session(c, sid, created, cwd, pid)
        return _reserve(c, sid, plan.entries)

    await db.write(lambda c: None)  # a read-only database says so here, before any work
    cache = await db.run(setup)
    # One transaction when replacing (the old session stays until the new one is whole) and for a
    # file of one batch (as bulk.py: each page written once, no WAL the size of several copies)
    bulk = plan.entries + 1 > (batch or BATCH)
    one_tx = replace or not bulk
    search_sql = _INSERT_BULK_JSON if bulk else _INSERT_SEARCH_JSON
    began = False
    reader: StreamReader | None = None
    try:
        if one_tx:
            await db.run(lambda c: c.execute("BEGIN IMMEDIATE"))
            began = True
            seq_base, branch_base = await db.run(begin, None)
        else:
            seq_base, branch_base = await db.write(begin, os.getpid())
        ends = (seq_base + plan.entries + 1, branch_base + plan.entries + 2)
        reader = StreamReader(plan, sid, batch or BATCH, seq_base, branch_base, str(db.path))
        prep = await loop.run_in_executor(None, reader.next)
        while prep is not None:
            if stop is not None and stop():
                raise ImportStopped(f"the import of {plan.path} was stopped; nothing of it was kept")
            upcoming = loop.run_in_executor(None, reader.next)  # read while SQLite indexes this batch
            try:
                held.append((prep.base, prep.texts))
                texts, held = (held, []) if not bulk or len(held) >= SEARCH_BATCHES else ([], held)
                if one_tx:
                    await db.run(_store, prep, search_sql, texts)
                else:
                    await db.write(_store, prep, search_sql, texts)
                    written += prep.bytes
                    if written >= CHECKPOINT_BYTES:
                        await db.run(_checkpoint)
                        written = 0
            except BaseException:
                await asyncio.gather(upcoming, return_exceptions=True)
                raise
            advance((1 - PLAN_SHARE) * (prep.done - shown))
            shown = prep.done
            prep = await upcoming
        if one_tx:
            await db.run(_finish, sid, created, reader, plan.leaf_id, ends, bulk, held)
            await db.run(lambda c: c.execute("COMMIT"))
            began = False
        else:
            await db.write(_finish, sid, created, reader, plan.leaf_id, ends, bulk, held)
    except BaseException:
        if began:
            await db.run(lambda c: c.execute("ROLLBACK") if c.in_transaction else None)
        elif not one_tx:
            await asyncio.shield(_drop(db, sid, delete_session))
        raise
    finally:
        if reader is not None:
            reader.close()
        await db.run(lambda c: c.execute(f"PRAGMA cache_size = {cache}"))
    await _balance(db, fts.bulk_merge_step if bulk else fts.balance_step)
    advance(1.0)
    report.entries = reader.entries - (1 if plan.marker_id is not None else 0)
    last = await db.run(lambda c: c.execute("SELECT max(entry_seq) FROM session_entries WHERE session_id=?",
                                            (sid,)).fetchone()[0] or 0)
    return sid, last, report


async def _balance(db: Database, merge_step: Callable[[sqlite3.Connection], bool]) -> None:
    """The search index merged after the load where it needs it, a step per transaction
    (fts.balance_step for the index appends use, fts.bulk_merge_step for the bulk one)."""
    for step in range(1, 4001):
        if not await db.write(merge_step):
            break
        if step % 8 == 0:  # a step rewrites up to 1,024 pages: the WAL restarts every ~32 MB
            await db.run(_checkpoint)
    await db.run(_truncate_wal)


def _truncate_wal(c: sqlite3.Connection) -> None:
    """After the import: everything copied into the database and the WAL file cut to nothing, so
    an import leaves no WAL behind it as large as its biggest batch (on a nearly full disk, that
    is room a later open needs). Never waits: if a reader is in the WAL, it stays as it is."""
    try:
        busy, frames, copied = c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if busy or frames != copied:
            return
        timeout = c.execute("PRAGMA busy_timeout").fetchone()[0]
        c.execute("PRAGMA busy_timeout = 0")
        try:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            c.execute(f"PRAGMA busy_timeout = {int(timeout)}")
    except sqlite3.Error:
        pass


async def _drop(db: Database, sid: str, delete_session: Callable[[sqlite3.Connection, str], None]) -> None:
    """Delete what an unfinished import stored (only while it is still marked unfinished)."""
    def tx(c: sqlite3.Connection) -> None:
        if c.execute("SELECT 1 FROM sessions WHERE id=? AND import_pid IS NOT NULL", (sid,)).fetchone():
            delete_session(c, sid)

    try:
        await db.write(tx)
    except Exception:  # noqa: BLE001 - the next catalog opened on this database deletes it (drop_abandoned)
        pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process, alive
        return True
    return True


async def drop_abandoned(db: Database, delete_session: Callable[[sqlite3.Connection, str], None]) -> None:
    """Delete the sessions of imports whose process died before their last batch."""
    found = await db.run(lambda c: c.execute(
        "SELECT id, import_pid FROM sessions WHERE import_pid IS NOT NULL").fetchall())
    if found and not any(_alive(int(pid)) for _, pid in found):
        # an older treechat's import raised it while it ran (to 64): appends need FTS5's default
        await db.write(fts.set_crisis_merge, fts.CRISIS_MERGE)

    def drop(c: sqlite3.Connection, sid: str, pid: int) -> None:
        if c.execute("SELECT 1 FROM sessions WHERE id=? AND import_pid=?", (sid, pid)).fetchone():
            delete_session(c, sid)

    for sid, pid in found:
        if not _alive(int(pid)):
            await db.write(drop, sid, pid)


