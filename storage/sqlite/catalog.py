"""SqliteCatalog: every session of one database file — create, find, list, rename, fork,
delete, bulk import and search. Lists read materialized rows only, never entries."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Sequence

from ..aggregates import advance_path_state, advance_stats
from ..base import (
    AmbiguousSessionError,
    ImportReport,
    PathState,
    SearchHit,
    SessionNotFoundError,
    SessionStats,
    SessionSummary,
    StorageError,
)
from ..model import (
    CompactionEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    SessionInfoEntry,
    new_entry_id,
    new_session_id,
    now_iso,
)
from . import fts, rows
from .db import Database
from .search import search_tx
from .storage import SqliteSessionStorage, _fresh_id, append_tx

_SUMMARY_SQL = (
    "SELECT s.id, s.created_at, m.modified_at, m.name, s.cwd, m.entry_count, m.message_count,"
    " m.total_tokens, m.cost_total, m.first_message, s.parent_session_id, s.parent_entry_id"
    " FROM sessions s JOIN session_materialized m ON m.session_id = s.id"
    " ORDER BY m.modified_ms DESC, s.created_at DESC, s.id DESC"
)


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _resolve(c: sqlite3.Connection, ref: str) -> str:
    if c.execute("SELECT 1 FROM sessions WHERE id=?", (ref,)).fetchone():
        return ref
    found = [r[0] for r in c.execute(
        "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6", (_like_prefix(ref),)
    )] if ref else []
    if not found:
        raise SessionNotFoundError(ref)
    if len(found) > 1:
        raise AmbiguousSessionError(ref, found)
    return found[0]


def _insert_session(
    c: sqlite3.Connection, sid: str, created_at: str, cwd: str, parent_sid: str | None, parent_eid: str | None
) -> None:
    if c.execute("SELECT 1 FROM sessions WHERE id=?", (sid,)).fetchone():
        raise StorageError(f"A session with id {sid} already exists")
    c.execute(
        "INSERT INTO sessions (id, created_at, cwd, parent_session_id, parent_entry_id) VALUES (?,?,?,?,?)",
        (sid, created_at, cwd, parent_sid, parent_eid),
    )
    c.execute(
        "INSERT INTO session_materialized (session_id, modified_at, modified_ms) VALUES (?, ?, ?)",
        (sid, created_at, rows.iso_ms_or_zero(created_at)),
    )


def bulk_load(c: sqlite3.Connection, sid: str, entries: Sequence[Entry], leaf_id: str | None, report: ImportReport) -> None:
    """Write a whole session in one pass (inside write_tx; the sessions row exists already).

    Materialized rows are computed here with the same aggregate functions as append, walking
    the tree depth-first from its roots; entries on or under a parent cycle are stored but get
    no branch or path state, so path reads on them raise InvalidTreeError instead of looping.
    """
    kept, _ = report.unique(entries, leaf_id)
    n = len(kept)
    base = c.execute("SELECT coalesce(max(entry_seq), 0) + 1 FROM session_entries").fetchone()[0]
    index = {e.id: i for i, e in enumerate(kept)}
    parent_idx: list[int | None] = [
        index.get(e.parent_id) if e.parent_id is not None and e.parent_id != e.id else None for e in kept
    ]
    c.executemany(rows.INSERT_ENTRY, [rows.entry_row(base + i, sid, e) for i, e in enumerate(kept)])

    children: list[list[int]] = [[] for _ in range(n)]
    roots: list[int] = []
    for i, p in enumerate(parent_idx):
        if p is not None:
            children[p].append(i)
        elif kept[i].parent_id != kept[i].id:  # self-parented entries are a 1-cycle
            roots.append(i)

    branch_base = c.execute("SELECT coalesce(max(branch_id), 0) + 1 FROM branches").fetchone()[0]
    branches: list[tuple[Any, ...]] = []
    placed: list[tuple[int, int, int, PathState] | None] = [None] * n  # branch, depth, ctx_start, state
    extended = [False] * n
    branch_entry_rows, mat_rows = [], []
    stack = [(r, None) for r in reversed(roots)]
    while stack:
        i, p = stack.pop()
        e = kept[i]
        pb, pd, pctx, pstate = placed[p] if p is not None else (None, 0, 1, PathState())
        state = advance_path_state(pstate, e)
        if p is not None and not extended[p] and not isinstance(e, LeafEntry):
            extended[p] = True
            branch = pb
        else:
            branch = branch_base + len(branches)
            branches.append((branch, sid, pb, pd))
        ctx = pctx
        if isinstance(e, CompactionEntry):
            ctx = state.depth
            if not e.retained_tail and e.first_kept_entry_id is not None:
                j = p
                while j is not None and kept[j].id != e.first_kept_entry_id:
                    j = parent_idx[j]
                ctx = placed[j][1] if j is not None else 1  # type: ignore[index]
        placed[i] = (branch, state.depth, ctx, state)
        branch_entry_rows.append((branch, state.depth, base + i))
        mat_rows.append((base + i, branch, state.depth, ctx, *rows.state_values(state)))
        stack.extend((ch, i) for ch in reversed(children[i]))
    for i in range(n):
        if placed[i] is None and len(report.problems) < 5:
            report.problems.append(f"entry {kept[i].id} is on or under a parent cycle")
    c.executemany(rows.INSERT_BRANCH, branches)
    c.executemany(rows.INSERT_BRANCH_ENTRY, branch_entry_rows)
    c.executemany(rows.INSERT_MATERIALIZED, mat_rows)

    stats, name, first, message_ms = SessionStats(), None, "", None
    labels: dict[str, tuple[str, int, int]] = {}  # target → (label, setter seq, position)
    search_rows = []
    for i, e in enumerate(kept):
        if isinstance(e, LeafEntry):
            continue  # markers are not counted, labelled or searchable
        stats = advance_stats(stats, e)
        if isinstance(e, LabelEntry):
            if e.label:
                position = labels[e.target_id][2] if e.target_id in labels else base + i
                labels[e.target_id] = (e.label, base + i, position)
            else:
                labels.pop(e.target_id, None)
        elif isinstance(e, SessionInfoEntry):
            name = (e.name or "").strip() or None
        first = first or rows.first_user_text(e)
        ms = rows.message_ms(e)
        if ms is not None and (message_ms is None or ms > message_ms):
            message_ms = ms
        text = rows.search_text(e)
        if text:
            search_rows.append((base + i, text))
    with fts.bulk_mode(c):  # FTS5 merges as it likes here; level 0 is left small (fts.py)
        c.executemany(rows.INSERT_SEARCH, search_rows)
    c.executemany(
        "INSERT INTO labels (session_id, target_id, label, entry_seq, position) VALUES (?,?,?,?,?)",
        [(sid, t, *v) for t, v in labels.items()],
    )
    assignments = ", ".join(f"{f}=?" for f in rows.STATS_FIELDS)
    c.execute(f"UPDATE session_materialized SET {assignments}, name=?, first_message=? WHERE session_id=?",
              (*rows.stats_values(stats), name, first, sid))
    if message_ms is not None:
        c.execute(
            "UPDATE session_materialized SET message_ms=?, modified_ms=?, modified_at=? WHERE session_id=?",
            (message_ms, message_ms, rows.ms_to_iso(message_ms), sid),
        )
    c.execute("UPDATE sessions SET active_leaf_id=? WHERE id=?", (leaf_id, sid))
    report.session_id = sid
    report.entries = n


class _OpenDescriptor:
    """`SqliteCatalog.open(path)` opens a database; `catalog.open(ref)` opens a session —
    storage.open_catalog and the SessionCatalog protocol both fix the name `open`."""

    def __get__(self, obj: "SqliteCatalog | None", cls: type) -> Any:
        if obj is None:
            return cls._open_database
        return obj._open_session


class SqliteCatalog:
    def __init__(self, db: Database):
        self.db = db

    open = _OpenDescriptor()

    @classmethod
    async def _open_database(cls, path: Path | str) -> "SqliteCatalog":
        return cls(await Database.open(Path(path)))

    @property
    def path(self) -> Path:
        return self.db.path

    def _storage(self, sid: str) -> SqliteSessionStorage:
        return SqliteSessionStorage(self.db, sid, self)

    async def create(
        self,
        *,
        session_id: str | None = None,
        cwd: str = "",
        parent_session_id: str | None = None,
        parent_entry_id: str | None = None,
    ) -> SqliteSessionStorage:
        sid = session_id or new_session_id()
        await self.db.write(_insert_session, sid, now_iso(), cwd, parent_session_id, parent_entry_id)
        return self._storage(sid)

    async def _open_session(self, session_ref: str) -> SqliteSessionStorage:
        """By full id or unique prefix (SessionNotFoundError / AmbiguousSessionError)."""
        return self._storage(await self.db.run(_resolve, session_ref))

    async def latest(self) -> SqliteSessionStorage | None:
        row = await self.db.run(lambda c: c.execute(_SUMMARY_SQL + " LIMIT 1").fetchone())
        return self._storage(row[0]) if row else None

    async def list(self) -> list[SessionSummary]:
        found = await self.db.run(lambda c: c.execute(_SUMMARY_SQL).fetchall())
        return [
            SessionSummary(
                id=r[0], created_at=r[1], modified_at=r[2], name=r[3], cwd=r[4], entry_count=r[5],
                message_count=r[6], total_tokens=r[7], cost_total=r[8], first_message=r[9],
                parent_session_id=r[10], parent_entry_id=r[11],
            )
            for r in found
        ]

    async def rename(self, session_ref: str, name: str) -> None:
        def tx(c: sqlite3.Connection) -> None:
            sid = _resolve(c, session_ref)
            leaf = c.execute("SELECT active_leaf_id FROM sessions WHERE id=?", (sid,)).fetchone()[0]
            entry = SessionInfoEntry(id=_fresh_id(c, sid), parent_id=leaf, name=name.strip())
            append_tx(c, sid, entry, entry.id)

        await self.db.write(tx)

    async def fork(self, session_ref: str, entry_id: str) -> SqliteSessionStorage:
        source = await self.open(session_ref)
        path = [e for e in await source.get_path_to_root(entry_id) if not isinstance(e, (LabelEntry, LeafEntry))]
        meta = await source.get_metadata()
        labels = await self.db.run(
            lambda c: c.execute(
                "SELECT l.target_id, l.label, e.timestamp FROM labels l JOIN session_entries e"
                " ON e.entry_seq = l.entry_seq WHERE l.session_id=? ORDER BY l.position",
                (source.session_id,),
            ).fetchall()
        )
        # Like Pi's createBranchedSession: labels of entries on the path are re-created as new
        # label entries chained after the path, each keeping its original timestamp.
        on_path = {e.id for e in path}
        entries: list[Entry] = list(path)
        for target, label, ts in labels:
            if target in on_path:
                taken = on_path | {e.id for e in entries}
                entries.append(
                    LabelEntry(id=new_entry_id(taken), parent_id=entries[-1].id, timestamp=ts, target_id=target, label=label)
                )
        sid = new_session_id()

        def tx(c: sqlite3.Connection) -> None:
            _insert_session(c, sid, now_iso(), meta.cwd, source.session_id, entry_id)
            bulk_load(c, sid, entries, entries[-1].id, ImportReport())

        await self.db.write(tx)
        return self._storage(sid)

    async def delete(self, session_ref: str) -> None:
        def tx(c: sqlite3.Connection) -> None:
            sid = _resolve(c, session_ref)
            # The search index is not reached by foreign keys; the rest cascades from sessions.
            c.execute(
                "DELETE FROM entry_search WHERE rowid IN (SELECT entry_seq FROM session_entries WHERE session_id=?)",
                (sid,),
            )
            c.execute("DELETE FROM sessions WHERE id=?", (sid,))

        await self.db.write(tx)

    async def import_session(
        self, header: dict[str, Any], entries: Sequence[Entry], leaf_id: str | None
    ) -> tuple[SqliteSessionStorage, ImportReport]:
        report = ImportReport()
        wanted = header.get("id") if isinstance(header.get("id"), str) and header.get("id") else None
        created = header.get("timestamp") if isinstance(header.get("timestamp"), str) else now_iso()
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""

        def tx(c: sqlite3.Connection) -> str:
            sid = wanted or new_session_id()
            _insert_session(c, sid, created, cwd, None, None)
            bulk_load(c, sid, entries, leaf_id, report)
            return sid

        sid = await self.db.write(tx)
        return self._storage(sid), report

    async def search(self, query: str, *, session_id: str | None = None, limit: int = 50) -> list[SearchHit]:
        def read(c: sqlite3.Connection) -> list[SearchHit]:
            sid = _resolve(c, session_id) if session_id is not None else None
            return search_tx(c, query, sid, limit)

        return await self.db.run(read)

    async def close(self) -> None:
        await self.db.close()
