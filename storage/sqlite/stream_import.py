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

The reader (`StreamReader`) turns a planned file's lines, a batch at a time, into every row that
batch writes, on a worker thread while SQLite indexes the batch before. Each entry is placed as `sql/bulk.place` places it for a file whose parents come first:
branch segment, depth, context start, path state. The entries of this batch and the one before
are at hand; an older parent (a fork from far back) is read from what earlier batches committed.
Every entry_seq and branch_id is known here, before the database is asked: the import's ranges
were reserved when it began (`_reserve`), so another process writing meanwhile takes
numbers after them.

This loop runs once per entry of the file, so it is written for CPython: the common path (a
message continuing its parent's branch) inline, with its lookups bound to locals, and the rare
ones (a fork from far back, a compaction, a label, a name) in methods of their own. Its values are
held to bulk.py's by tests/storage/test_stream_import.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable

import msgspec

from ..aggregates import EMPTY_STATE, StateTuple, StatsAccumulator, advance_state, first_user_text, message_ms
from ..base import ImportReport
from ..gc_policy import paused
from ..imports.stream_scan import FilePlan, kept_lines, leaf_marker, validated
from ..json_types import Row
from ..model_lite import ms_to_iso
from ..sql import rows
from ..views import EntryView
from . import fts, inserts
from .bulk import _INSERT_SEARCH_JSON
from .db import Database
from .storage import _LOCATE_SQL, UPSERT_LABEL

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


_texts_json = msgspec.json.Encoder().encode  # 5-8x json.dumps; json_each reads it the same


class Batch:
    """One batch read, validated and placed off the database thread: every row it writes."""

    __slots__ = ("texts", "base", "entries", "branches", "members", "mats", "labels", "done", "bytes")

    def __init__(self) -> None:
        self.texts = ""  # the search texts, one JSON array (rowid = base + position)
        self.base = 0
        self.entries: list[Row] = []
        self.branches: list[tuple[int, str, int | None, int]] = []
        self.members: list[tuple[int, int, int]] = []
        self.mats: list[Row] = []
        self.labels: list[tuple[str, str, str | None, int]] = []  # (session, target, label or None, seq) in order
        self.done = 0.0  # share of the second pass done once this batch is stored
        self.bytes = 0


Placement = tuple[int, int, int, int, StateTuple]  # seq, branch, depth, ctx_start, state


class StreamReader:
    """The second pass (module doc). `next()` gives the next batch, None after the last."""

    def __init__(self, plan: FilePlan, sid: str, size: int, seq_base: int, branch_base: int, path: str) -> None:
        self.plan, self.sid, self.size, self.path = plan, sid, size, path
        self.lines = kept_lines(plan)
        self.finished = False
        self.read = 0
        self.next_seq, self.next_branch = seq_base, branch_base
        self.new: dict[str, Placement] = {}
        self.old: dict[str, Placement] = {}
        self.extended_new: set[str] = set()  # entries whose branch a child continued (this batch, the last)
        self.extended_old: set[str] = set()
        self.branch_parent: dict[int, tuple[int | None, int]] = {}  # this import's branches: parent, fork depth
        self.stats = StatsAccumulator()
        self.name: str | None = None
        self.first = ""
        self.newest: float | None = None
        self.stored = 0
        self.entries = 0  # stored lines (the leaf markers of the file included, as read_records counts)
        self._conn: sqlite3.Connection | None = None
        self._model: dict[str, str] | None = None  # the last state's model and tools, and their JSON
        self._model_json: str | None = None
        self._tools: list[str] | None = None
        self._tools_json: str | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def next(self) -> Batch | None:
        if self.finished:
            return None
        pending: list[tuple[int, bytes]] = []
        with paused(keep=True):  # the batch's rows live until stored
            for number, line in self.lines:
                pending.append((number, line))
                self.read += len(line) + 1
                if len(pending) >= self.size:
                    break
            else:
                self.finished = True
            pairs: list[tuple[bytes | str, EntryView]] = list(validated(pending, self.plan.report)) if pending else []
            if self.finished and (marker := leaf_marker(self.plan)) is not None:
                pairs.append(marker)
            if not pairs:
                return None
            batch = self._batch(pairs)
        batch.done = min(1.0, self.read / max(self.plan.size, 1))
        return batch

    def _batch(self, pairs: list[tuple[bytes | str, EntryView]]) -> Batch:
        b = Batch()
        self.entries += len(pairs)
        b.base = seq = self.next_seq
        texts: list[str] = []
        sid = self.sid
        new, old, ext_new, ext_old = self.new, self.old, self.extended_new, self.extended_old
        row_and_text, state_values, stats = rows.view_row_and_text, self._state_values, self.stats
        add_entry, add_text, add_member, add_mat = b.entries.append, texts.append, b.members.append, b.mats.append
        size = 0
        for raw, v in pairs:
            payload = raw.decode() if isinstance(raw, bytes) else raw
            row, text = row_and_text(seq, sid, v, payload)
            add_entry(row)
            size += len(payload)
            add_text(text)
            # -- placement (sql/bulk.place's values)
            t, p = v.type, v.parent_id
            parent: Placement | None = None
            from_db = False
            if p is not None and p != v.id:
                parent = new.get(p) or old.get(p)
                if parent is None:
                    parent, from_db = self._stored(p)
            if parent is not None:
                _, pb, pd, ctx, pstate = parent
            else:
                pb, pd, ctx, pstate = None, 0, 1, EMPTY_STATE
            state = advance_state(pstate, v)
            depth = state[0]
            if (parent is not None and pb is not None and t != "leaf" and p not in ext_new and p not in ext_old
                    and (not from_db or not self._continued(pb, pd))):
                ext_new.add(p)  # type: ignore[arg-type]
                branch = pb
            else:
                branch = self._new_branch(b, pb, pd)
            if t == "compaction":
                ctx = self._context_start(v, depth, pb, pd)
            new[v.id] = (seq, branch, depth, ctx, state)
            add_member((branch, depth, seq))
            add_mat((seq, branch, depth, ctx, *state_values(state)))
            # -- the session's aggregates (leaf markers are not counted, labelled or searchable)
            if t != "leaf":
                self.stored += 1
                stats.add(v)
                if t == "message":
                    if not self.first:
                        self.first = first_user_text(v)
                    ms = message_ms(v)
                    if ms is not None and (self.newest is None or ms > self.newest):
                        self.newest = ms
                elif t == "label" or t == "session_info":
                    self._setting(b, v, seq)
            seq += 1
        self.next_seq = seq
        b.texts = _texts_json(texts).decode()
        b.bytes = size + len(b.texts)
        self.old, self.new = new, {}
        self.extended_old, self.extended_new = ext_new, set()
        return b

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:  # only for a fork from far back: most imports never open it
            self._conn = sqlite3.connect(self.path, check_same_thread=False)
            self._conn.execute("PRAGMA query_only = ON")
            self._conn.execute("PRAGMA busy_timeout = 5000")
        return self._conn

    def _find(self, entry_id: str) -> Placement | None:
        """The placement of an entry stored before, or None."""
        return self.new.get(entry_id) or self.old.get(entry_id) or self._stored(entry_id)[0]

    def _stored(self, entry_id: str) -> tuple[Placement | None, bool]:
        """(placement, True) of an entry of an earlier batch (a fork from far back), read from
        the database; (None, False) if there is none."""
        row = self._db().execute(_LOCATE_SQL, (self.sid, entry_id)).fetchone()
        if row is None or row[1] is None:
            return None, False
        return (row[0], row[1], row[2], row[3], rows.state_tuple_from(row[2], row[4:])), True

    def _continued(self, branch: int, depth: int) -> bool:
        """Did an earlier batch continue this branch past `depth` (a stored parent's branch)?"""
        return self._db().execute("SELECT 1 FROM branch_entries WHERE branch_id=? AND depth=?",
                                  (branch, depth + 1)).fetchone() is not None

    def _new_branch(self, b: Batch, parent: int | None, depth: int) -> int:
        branch = self.next_branch
        self.next_branch += 1
        b.branches.append((branch, self.sid, parent, depth))
        self.branch_parent[branch] = (parent, depth)
        return branch

    def _context_start(self, v: EntryView, depth: int, pb: int | None, pd: int) -> int:
        """Where a compaction's context starts: the entry it keeps when that is on its path."""
        kept = v.first_kept_entry_id
        if v.retained_tail is True or not isinstance(kept, str):
            return depth
        k = self._find(kept)
        return k[2] if k is not None and pb is not None and self._on_path(k[1], k[2], pb, pd) else 1

    def _on_path(self, branch: int, depth: int, at_branch: int, at_depth: int) -> bool:
        """Is (branch, depth) on the path to (at_branch, at_depth)? (Only this import's branches
        can be: the session is its own.)"""
        b: int | None = at_branch
        upto = at_depth
        while b is not None:
            if b == branch:
                return depth <= upto
            found = self.branch_parent.get(b)
            if found is None:
                return False
            b, upto = found
        return False

    def _state_values(self, s: StateTuple) -> Row:
        """rows.state_tuple_values, the JSON of the model and tools remembered from the entry before:
        a child shares its parent's objects unless it changed them (advance_state), and a reply
        names the same model as the one before it."""
        model, tools = s[8], s[10]
        if model is not self._model:
            last = self._model
            if model is None or last is None or model != last or tuple(model) != tuple(last):  # keys in order too
                self._model_json = rows.model_json(model) if model is not None else None
            self._model = model
        if tools is not self._tools:
            if tools != self._tools:
                self._tools_json = json.dumps(tools) if tools is not None else None
            self._tools = tools
        return (s[1], s[2], s[3], s[4], s[5], s[6], s[7], self._model_json, s[9], self._tools_json)

    def _setting(self, b: Batch, v: EntryView, seq: int) -> None:
        """A label (set or cleared) or the session's name."""
        if v.type == "session_info":
            self.name = (v.name.strip() if isinstance(v.name, str) else "") or None
        elif isinstance(v.target_id, str):
            b.labels.append((self.sid, v.target_id, v.label if isinstance(v.label, str) and v.label else None, seq))


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


