"""SqliteSessionStorage: one session in the shared database.

Every write is one transaction (entry, branch membership, per-entry and whole-session
aggregates, labels, search index); every read is one query on materialized state. Nothing is
cached in the object, so several processes can share a session.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..aggregates import advance_path_state, advance_stats
from ..base import (
    AppendedEntries,
    DuplicateEntryError,
    EntryCursor,
    EntryNotFoundError,
    InvalidTreeError,
    PathState,
    SessionStats,
    StorageError,
    TreeRow,
)
from ..json_types import SqlValue
from ..model_lite import ms_to_iso, new_entry_id
from ..on_demand import parse_entry
from ..sql import rows
from ..tree.columns import TreeColumns, columns_from_rows
from . import fts, inserts
from .db import Database
from .tree_read import read_tree

if TYPE_CHECKING:
    from ..model import CompactionEntry, Entry, SessionMetadata
    from .catalog import SqliteCatalog

# A row as a query's SELECT list names it: sqlite3 hands rows out untyped, and the query's text
# is their type (each reader says what it takes from them).
Fetched = tuple[Any, ...]


# The entry models are imported in the functions that make or sort them: whoever calls them holds
# models, so pydantic is loaded by then, and a streamed `treechat import` (which opens a session
# but makes no model) runs without it.

# The path to an entry: walk up the (few) branch segments, then one ordered range read.
# ?3 is the first depth wanted; segments entirely above it are not visited.
PATH_SQL = """
WITH RECURSIVE chain(branch_id, upto) AS (
    VALUES (?1, ?2)
    UNION ALL
    SELECT b.parent_branch_id, b.fork_depth FROM chain JOIN branches b ON b.branch_id = chain.branch_id
    WHERE b.parent_branch_id IS NOT NULL AND b.fork_depth >= ?3
)
SELECT e.payload FROM chain
JOIN branch_entries be ON be.branch_id = chain.branch_id AND be.depth <= chain.upto AND be.depth >= ?3
JOIN session_entries e ON e.entry_seq = be.entry_seq
ORDER BY be.depth
"""

# The same path's tree fields (get_path_rows makes them rows: no join per entry, a third faster)
PATH_ROWS_SQL = PATH_SQL.replace(
    "SELECT e.payload FROM chain",
    "SELECT e.id, e.parent_id, e.type, e.role, e.preview, e.timestamp, e.status, e.target_id FROM chain",
)

# Is (branch ?3, depth ?4) on the path to (branch ?1, depth ?2)?
ON_PATH_SQL = """
WITH RECURSIVE chain(branch_id, upto) AS (
    VALUES (?1, ?2)
    UNION ALL
    SELECT b.parent_branch_id, b.fork_depth FROM chain JOIN branches b ON b.branch_id = chain.branch_id
    WHERE b.parent_branch_id IS NOT NULL
)
SELECT 1 FROM chain WHERE branch_id = ?3 AND upto >= ?4
"""

_LOCATE_SQL = (
    "SELECT e.entry_seq, m.branch_id, m.depth, m.ctx_start_depth, "
    + ", ".join("m." + c.strip() for c in rows.STATE_COLUMNS.split(","))
    + " FROM session_entries e LEFT JOIN entry_materialized m ON m.entry_seq = e.entry_seq"
    " WHERE e.session_id = ? AND e.id = ?"
)

def _locate(c: sqlite3.Connection, sid: str, entry_id: str) -> Fetched:
    """(seq, branch, depth, ctx_start, *state) of an entry; raises for unknown or cyclic ones."""
    row: Fetched | None = c.execute(_LOCATE_SQL, (sid, entry_id)).fetchone()
    if row is None:
        raise EntryNotFoundError(entry_id)
    if row[1] is None:
        raise InvalidTreeError(f"Entry {entry_id} is on or under a parent cycle; its path has no root")
    return row


def _fresh_id(c: sqlite3.Connection, sid: str) -> str:
    while True:
        candidate = new_entry_id()
        if c.execute("SELECT 1 FROM session_entries WHERE session_id=? AND id=?", (sid, candidate)).fetchone() is None:
            return candidate


def _context_start(c: sqlite3.Connection, sid: str, entry: CompactionEntry, depth: int, parent: Fetched | None) -> int:
    """Where get_path_to_root_or_compaction starts for entries under this compaction: the
    compaction itself with retainedTail, else its firstKeptEntryId when that is an ancestor,
    else the root (the walk up never meets it)."""
    if entry.retained_tail:
        return depth
    if entry.first_kept_entry_id is None or parent is None:
        return 1
    kept: tuple[int, int] | None = c.execute(
        "SELECT m.branch_id, m.depth FROM session_entries e JOIN entry_materialized m ON m.entry_seq = e.entry_seq"
        " WHERE e.session_id = ? AND e.id = ?",
        (sid, entry.first_kept_entry_id),
    ).fetchone()
    if kept and c.execute(ON_PATH_SQL, (parent[1], parent[2], kept[0], kept[1])).fetchone():
        return kept[1]
    return 1  # not an ancestor: the whole path (the context keeps nothing from before it)


def append_tx(c: sqlite3.Connection, sid: str, entry: Entry, leaf_after: str | None, *, move_leaf: bool = True) -> int:
    """Store one entry with everything derived from it (call inside write_tx); its entry_seq.
    The stored leaf becomes `leaf_after` unless `move_leaf` is False (a run's branch elsewhere)."""
    from ..model import CompactionEntry, LabelEntry, LeafEntry

    if c.execute("SELECT 1 FROM session_entries WHERE session_id=? AND id=?", (sid, entry.id)).fetchone():
        raise DuplicateEntryError(entry.id)
    parent = _locate(c, sid, entry.parent_id) if entry.parent_id is not None else None
    parent_state = rows.state_from(parent[2], parent[4:]) if parent else PathState()
    state = advance_path_state(parent_state, entry)
    depth = state.depth

    seq: int = c.execute(inserts.INSERT_ENTRY, rows.entry_row(None, sid, entry)).lastrowid  # type: ignore[assignment]
    # A leaf marker always gets its own one-entry branch so that the next append under its
    # target can still extend the target's branch instead of forking.
    extends = (
        parent is not None
        and not isinstance(entry, LeafEntry)
        and c.execute("SELECT 1 FROM branch_entries WHERE branch_id=? AND depth=?", (parent[1], depth)).fetchone()
        is None
    )
    if extends and parent is not None:
        branch = parent[1]
    else:
        branch = c.execute(
            inserts.INSERT_BRANCH, (None, sid, parent[1] if parent else None, parent[2] if parent else 0)
        ).lastrowid
    c.execute(inserts.INSERT_BRANCH_ENTRY, (branch, depth, seq))
    if isinstance(entry, CompactionEntry):
        ctx_start = _context_start(c, sid, entry, depth, parent)
    else:
        ctx_start = parent[3] if parent else 1
    c.execute(inserts.INSERT_MATERIALIZED, (seq, branch, depth, ctx_start, *rows.state_values(state)))
    if move_leaf:
        c.execute("UPDATE sessions SET active_leaf_id=? WHERE id=?", (leaf_after, sid))
    if isinstance(entry, LeafEntry):
        return seq  # a marker only moves the pointer: not counted, labelled or searchable

    text = rows.search_text(entry)
    if text:
        c.execute(inserts.INSERT_SEARCH, (seq, text))
    fts.after_append(c, seq)  # a small, bounded merge step every few appends
    if isinstance(entry, LabelEntry):
        if entry.label:
            c.execute(UPSERT_LABEL, (sid, entry.target_id, entry.label, seq, seq))
        else:
            c.execute("DELETE FROM labels WHERE session_id=? AND target_id=?", (sid, entry.target_id))
    _advance_session(c, sid, entry)
    return seq


UPSERT_LABEL = (
    "INSERT INTO labels (session_id, target_id, label, entry_seq, position) VALUES (?,?,?,?,?)"
    " ON CONFLICT (session_id, target_id) DO UPDATE SET label = excluded.label, entry_seq = excluded.entry_seq"
)


def _advance_session(c: sqlite3.Connection, sid: str, entry: Entry) -> None:
    from ..model import SessionInfoEntry

    row = c.execute(
        f"SELECT {rows.STATS_COLUMNS}, name, first_message, message_ms, modified_at, modified_ms"
        " FROM session_materialized WHERE session_id=?",
        (sid,),
    ).fetchone()
    if row is None:
        raise StorageError(f"Session {sid} no longer exists")
    stats = advance_stats(rows.stats_from(row[: len(rows.STATS_FIELDS)]), entry)
    name, first, message_ms, modified_at, modified_ms = row[len(rows.STATS_FIELDS) :]
    if isinstance(entry, SessionInfoEntry):
        name = (entry.name or "").strip() or None
    if not first:
        first = rows.first_user_text(entry)
    ms = rows.message_ms(entry)
    if ms is not None and (message_ms is None or ms > message_ms):
        message_ms = modified_ms = ms
        modified_at = ms_to_iso(ms)
    assignments = ", ".join(f"{f}=?" for f in rows.STATS_FIELDS)
    c.execute(
        f"UPDATE session_materialized SET {assignments}, name=?, first_message=?, message_ms=?, modified_at=?,"
        " modified_ms=? WHERE session_id=?",
        (*rows.stats_values(stats), name, first, message_ms, modified_at, modified_ms, sid),
    )


_APPENDED_SQL = (
    "SELECT e.entry_seq, e.payload, e.id, CASE WHEN p.entry_seq IS NULL THEN e.parent_id ELSE p.target_id END,"
    " e.type, e.role, e.preview, e.timestamp, l.label, e.status FROM session_entries e"
    " LEFT JOIN session_entries p ON p.session_id = e.session_id AND p.id = e.parent_id AND p.type = 'leaf'"
    " LEFT JOIN labels l ON l.session_id = e.session_id AND l.target_id = e.id"
    " WHERE e.session_id = ? AND e.entry_seq > ? ORDER BY e.entry_seq"
)


def last_seq(c: sqlite3.Connection, sid: str) -> int:
    row = c.execute("SELECT max(entry_seq) FROM session_entries WHERE session_id=?", (sid,)).fetchone()
    return row[0] or 0


class SqliteSessionStorage:
    def __init__(
        self, db: Database, session_id: str, catalog: SqliteCatalog | None = None, seen_seq: int = 0
    ):
        self.db = db
        self.session_id = session_id
        self.catalog = catalog
        # poll_appended: entries up to seen_seq were known when this object was made; entries
        # this object wrote itself are never reported.
        self._seen_seq = seen_seq
        self._own: set[int] = set()

    async def poll_appended(self) -> AppendedEntries:
        found = await self.db.run(lambda c: c.execute(_APPENDED_SQL, (self.session_id, self._seen_seq)).fetchall())
        if not found:
            return AppendedEntries()
        self._seen_seq = found[-1][0]
        foreign = [r for r in found if r[0] not in self._own]
        self._own = {s for s in self._own if s > self._seen_seq}
        if not foreign:
            return AppendedEntries()
        entries = rows.entries_of([(r[1],) for r in foreign])
        rows_ = [TreeRow(r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]) for r in foreign if r[4] != "leaf"]
        return AppendedEntries(entries, rows_)

    async def _one(self, sql: str, *params: SqlValue) -> Fetched | None:
        return await self.db.run(lambda c: c.execute(sql, params).fetchone())

    async def _all(self, sql: str, *params: SqlValue) -> list[Fetched]:
        return await self.db.run(lambda c: c.execute(sql, params).fetchall())

    # ------------------------------------------------------------ metadata

    async def get_metadata(self) -> SessionMetadata:
        row = await self._one(
            "SELECT s.created_at, s.cwd, m.name, s.parent_session_id, s.parent_entry_id FROM sessions s"
            " LEFT JOIN session_materialized m ON m.session_id = s.id WHERE s.id = ?",
            self.session_id,
        )
        if row is None:
            raise StorageError(f"Session {self.session_id} no longer exists")
        from ..model import SessionMetadata

        return SessionMetadata(
            id=self.session_id,
            created_at=row[0],
            cwd=row[1],
            name=row[2],
            path=str(self.db.path),
            parent_session_id=row[3],
            parent_entry_id=row[4],
        )

    async def get_leaf_id(self) -> str | None:
        row = await self._one("SELECT active_leaf_id FROM sessions WHERE id=?", self.session_id)
        return row[0] if row else None

    async def get_session_name(self) -> str | None:
        row = await self._one("SELECT name FROM session_materialized WHERE session_id=?", self.session_id)
        return row[0] if row else None

    async def get_session_stats(self) -> SessionStats:
        row = await self._one(
            f"SELECT {rows.STATS_COLUMNS} FROM session_materialized WHERE session_id=?", self.session_id
        )
        return rows.stats_from(row) if row else SessionStats()

    # ------------------------------------------------------------ writes

    async def create_entry_id(self) -> str:
        return await self.db.run(_fresh_id, self.session_id)

    async def append_entry(self, entry: Entry, *, move_leaf: bool = True) -> None:
        from ..model import LeafEntry

        if isinstance(entry, LeafEntry):
            raise StorageError("Leaf entries are written by set_leaf_id, not append_entry")
        self._own.add(await self.db.write(append_tx, self.session_id, entry, entry.id, move_leaf=move_leaf))

    async def set_leaf_id(self, leaf_id: str | None) -> None:
        from ..model import LeafEntry

        def tx(c: sqlite3.Connection) -> None:
            if leaf_id is not None:
                _locate(c, self.session_id, leaf_id)
            current = c.execute("SELECT active_leaf_id FROM sessions WHERE id=?", (self.session_id,)).fetchone()
            if current is not None and current[0] == leaf_id:
                return  # already there: a marker would change nothing
            marker = LeafEntry(id=_fresh_id(c, self.session_id), parent_id=leaf_id, target_id=leaf_id)
            self._own.add(append_tx(c, self.session_id, marker, leaf_id))

        await self.db.write(tx)

    # ------------------------------------------------------------ entries

    async def get_entry(self, entry_id: str) -> Entry | None:
        row = await self._one(
            "SELECT payload FROM session_entries WHERE session_id=? AND id=?", self.session_id, entry_id
        )
        return parse_entry(row[0]) if row else None

    async def _entries(self, sql: str, *params: SqlValue) -> list[Entry]:
        return await self.db.run(lambda c: rows.entries_of(c.execute(sql, params).fetchall()))

    async def find_entries(self, type: str) -> list[Entry]:
        return await self._entries(
            "SELECT payload FROM session_entries WHERE session_id=? AND type=? ORDER BY entry_seq",
            self.session_id,
            type,
        )

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        # Exactly the entries naming this parent (like Pi's getChildren); markers are no children.
        where = "parent_id IS NULL" if parent_id is None else "parent_id = ?"
        params = (self.session_id,) if parent_id is None else (self.session_id, parent_id)
        return await self._entries(
            f"SELECT payload FROM session_entries WHERE session_id=? AND {where} AND type <> 'leaf'"
            " ORDER BY entry_seq",
            *params,
        )

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        cursor = cursor or EntryCursor()

        def read(c: sqlite3.Connection) -> list[Entry]:
            where: list[str] = ["session_id = ?"]
            params: list[SqlValue] = [self.session_id]
            for ref, op in ((cursor.after_id, ">"), (cursor.before_id, "<")):
                if ref is not None:
                    where.append(f"entry_seq {op} ?")
                    params.append(_locate_seq(c, self.session_id, ref))
            if cursor.types is not None:
                where.append(f"type IN ({','.join('?' * len(cursor.types))})")
                params.extend(cursor.types)
            order = "DESC" if cursor.newest_first else "ASC"
            limit = f" LIMIT {int(cursor.limit)}" if cursor.limit is not None else ""
            sql = f"SELECT payload FROM session_entries WHERE {' AND '.join(where)} ORDER BY entry_seq {order}{limit}"
            return rows.entries_of(c.execute(sql, params).fetchall())

        return await self.db.run(read)

    # ------------------------------------------------------------ labels

    async def get_label(self, entry_id: str) -> str | None:
        row = await self._one(
            "SELECT label FROM labels WHERE session_id=? AND target_id=?", self.session_id, entry_id
        )
        return row[0] if row else None

    async def get_labels(self) -> dict[str, str]:
        return dict(
            await self._all(
                "SELECT target_id, label FROM labels WHERE session_id=? ORDER BY position", self.session_id
            )
        )

    # ------------------------------------------------------------ paths

    async def get_path_state(self, entry_id: str | None) -> PathState:
        if entry_id is None:
            return PathState()
        row = await self.db.run(_locate, self.session_id, entry_id)
        return rows.state_from(row[2], row[4:])

    async def _path(self, leaf_id: str, from_compaction: bool) -> list[Entry]:
        def read(c: sqlite3.Connection) -> list[Entry]:
            _, branch, depth, ctx_start, *_ = _locate(c, self.session_id, leaf_id)
            return rows.entries_of(c.execute(PATH_SQL, (branch, depth, ctx_start if from_compaction else 1)).fetchall())

        return await self.db.run(read)

    async def get_path_to_root(self, leaf_id: str) -> list[Entry]:
        return await self._path(leaf_id, False)

    async def get_path_to_root_or_compaction(self, leaf_id: str) -> list[Entry]:
        return await self._path(leaf_id, True)

    async def get_tree_rows(self) -> list[TreeRow]:
        def read(c: sqlite3.Connection) -> list[TreeRow]:
            labels = dict(c.execute("SELECT target_id, label FROM labels WHERE session_id=?", (self.session_id,)))
            cur = c.execute(
                "SELECT id, parent_id, type, role, preview, timestamp, target_id, status FROM session_entries"
                " WHERE session_id=? ORDER BY entry_seq",
                (self.session_id,),
            )
            out: list[TreeRow] = []
            markers: dict[str, str | None] = {}
            get = labels.get
            # tuple.__new__ skips the NamedTuple's Python-level __new__ (100k rows: ~12 ms of ~140);
            # one str object per distinct type/role (SQLite returns a new one per row) makes every
            # later comparison of them an identity check (tree index + layout: ~10 ms less at 100k)
            new, append, marker = tuple.__new__, out.append, markers.get
            words: dict[str, str] = {}
            word = words.setdefault
            for i, p, t, r, pv, ts, target, status in cur:
                if t == "leaf":
                    markers[i] = target  # not drawn; an entry appended under one hangs under its target
                    continue
                append(new(TreeRow, (i, marker(p, p), word(t, t), r and word(r, r), pv, ts, get(i), status)))
            return out

        return await self.db.run(read)

    async def get_tree_columns(self) -> TreeColumns:
        columns = await self.db.read_aside(read_tree, self.session_id)
        return columns if columns is not None else columns_from_rows(await self.get_tree_rows())

    async def get_path_rows(self, leaf_id: str) -> list[TreeRow]:
        def read(c: sqlite3.Connection) -> list[TreeRow]:
            sid = self.session_id
            _, branch, depth, ctx_start, *_ = _locate(c, sid, leaf_id)
            found = c.execute(PATH_ROWS_SQL, (branch, depth, ctx_start)).fetchall()
            # as get_tree_rows: a parent that is a leaf marker is named by the marker's target
            markers = {r[0]: r[7] for r in found if r[2] == "leaf"}
            if found and found[0][1] is not None and found[0][1] not in markers:  # the path's start's parent
                above = c.execute("SELECT target_id FROM session_entries WHERE session_id = ? AND id = ? AND"
                                  " type = 'leaf'", (sid, found[0][1])).fetchone()
                if above is not None:
                    markers[found[0][1]] = above[0]
            labels = dict(c.execute("SELECT target_id, label FROM labels WHERE session_id = ?", (sid,)))
            return [TreeRow(i, markers.get(p, p) if p in markers else p, t, role, pv, ts, labels.get(i), st)
                    for i, p, t, role, pv, ts, st, _ in found if t != "leaf"]

        return await self.db.run(read)

    async def get_entries_by_ids(self, entry_ids: Sequence[str]) -> list[Entry]:
        def read(c: sqlite3.Connection) -> list[Entry]:
            found: dict[str, str] = {}
            wanted = list(dict.fromkeys(entry_ids))
            for at in range(0, len(wanted), 500):
                part = wanted[at : at + 500]
                found.update(c.execute(f"SELECT id, payload FROM session_entries WHERE session_id = ? AND id IN"
                                       f" ({','.join('?' * len(part))})", (self.session_id, *part)))
            return rows.entries_of([(found[i],) for i in entry_ids if i in found])

        return await self.db.run(read)

    async def close(self) -> None:
        """The connection belongs to the catalog; closing a session releases nothing."""


def _locate_seq(c: sqlite3.Connection, sid: str, entry_id: str) -> int:
    row: tuple[int] | None = c.execute("SELECT entry_seq FROM session_entries WHERE session_id=? AND id=?",
                                       (sid, entry_id)).fetchone()
    if row is None:
        raise EntryNotFoundError(entry_id)
    return row[0]
