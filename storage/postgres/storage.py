"""PostgresSessionStorage: one session on a shared server.

The same shape as SQLite's (entries, branch segments, materialized path and session state),
for several processes on several machines at once:

* every write to a session first locks its `sessions` row (FOR UPDATE), so writers of one
  session take turns, a fork decision (extend the parent's branch or start a new one) is never
  made on a stale view, and entry_seq grows in commit order within the session;
* an append is two round trips (pipeline mode): BEGIN, the lock and one query for every lookup
  (which also takes the new entry_seq), then the inserts and COMMIT;
* the leaf pointer is `sessions.active_leaf_id`: the last leaf-moving append or leaf move committed wins
  (docs/architecture.md); an entry appended under a stale leaf is a new branch, never an overwrite;
* each commit sends NOTIFY treechat '<session id>' (feed.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar, cast

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
from ..json_types import Row
from ..model import (
    CompactionEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    SessionInfoEntry,
    SessionMetadata,
    new_entry_id,
    parse_entry,
)
from ..model_lite import ms_to_iso
from ..sql import rows
from ..tree.columns import TreeColumns, columns_from_rows
from .db import Conn, PgDatabase

if TYPE_CHECKING:
    from psycopg.abc import Params
    from psycopg.rows import TupleRow

    from .catalog import PostgresCatalog

V = TypeVar("V")
CHANNEL = "treechat"
STATE = ", ".join("m." + c.strip() for c in rows.STATE_COLUMNS.split(","))

# The path to an entry: the (few) branch segments walked up, then one ordered range read each.
PATH_SQL = """
WITH RECURSIVE chain(branch_id, upto) AS (
    SELECT %(branch)s::bigint, %(depth)s::integer
    UNION ALL
    SELECT b.parent_branch_id, b.fork_depth FROM chain JOIN branches b ON b.branch_id = chain.branch_id
    WHERE b.parent_branch_id IS NOT NULL AND b.fork_depth >= %(low)s
)
SELECT e.payload FROM chain
JOIN branch_entries be ON be.branch_id = chain.branch_id AND be.depth <= chain.upto AND be.depth >= %(low)s
JOIN session_entries e ON e.entry_seq = be.entry_seq
ORDER BY be.depth
"""

# The same path as tree rows (a marker's target for a parent that is a marker, as get_tree_rows)
PATH_ROWS_SQL = PATH_SQL.replace("SELECT e.payload FROM chain", (
    "SELECT e.id, CASE WHEN p.type = 'leaf' THEN p.target_id ELSE e.parent_id END, e.type, e.role, e.preview,"
    " e.timestamp, l.label, e.status FROM chain")).replace("ON e.entry_seq = be.entry_seq", (
        "ON e.entry_seq = be.entry_seq LEFT JOIN session_entries p ON p.session_id = e.session_id AND p.id ="
        " e.parent_id LEFT JOIN labels l ON l.session_id = e.session_id AND l.target_id = e.id"))

ON_PATH_SQL = """
WITH RECURSIVE chain(branch_id, upto) AS (
    SELECT %s::bigint, %s::integer
    UNION ALL
    SELECT b.parent_branch_id, b.fork_depth FROM chain JOIN branches b ON b.branch_id = chain.branch_id
    WHERE b.parent_branch_id IS NOT NULL
)
SELECT 1 FROM chain WHERE branch_id = %s AND upto >= %s LIMIT 1
"""

LOCATE_SQL = (
    f"SELECT e.entry_seq, m.branch_id, m.depth, m.ctx_start_depth, {STATE} FROM session_entries e"
    " LEFT JOIN entry_materialized m ON m.entry_seq = e.entry_seq WHERE e.session_id = %s AND e.id = %s"
)

# The session's row lock, alone: under READ COMMITTED a statement that waited for a row lock
# still reads every other table as it was when the statement began, so the lookups must come
# in a statement of their own, after the lock is held (they then see what the previous writer
# committed). Both go to the server in one round trip (a pipeline), with BEGIN.
LOCK_SQL = "SELECT 1 FROM sessions WHERE id = %(sid)s FOR UPDATE"
# Everything an append must know: the leaf, whether the id is taken, the parent's place and
# state, whether its branch goes on below it.
APPEND_LOOKUP_SQL = (
    "SELECT s.active_leaf_id,"
    " EXISTS (SELECT 1 FROM session_entries d WHERE d.session_id = s.id AND d.id = %(id)s),"
    f" p.entry_seq, m.branch_id, m.depth, m.ctx_start_depth, {STATE},"
    " EXISTS (SELECT 1 FROM branch_entries be WHERE be.branch_id = m.branch_id AND be.depth = m.depth + 1),"
    # the new entry's place in the session's order: taken here, under the lock (see the schema)
    " nextval('treechat_entry_seq')"
    " FROM sessions s"
    " LEFT JOIN session_entries p ON p.session_id = s.id AND p.id = %(parent)s"
    " LEFT JOIN entry_materialized m ON m.entry_seq = p.entry_seq"
    " WHERE s.id = %(sid)s"
)

INSERT_ENTRY = (
    "INSERT INTO session_entries (entry_seq, session_id, id, parent_id, type, role, timestamp, preview,"
    " target_id, payload, status) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
NEW_BRANCH = "currval('treechat_branch_seq')"
MAT_COLUMNS = ("entry_seq, branch_id, depth, ctx_start_depth, message_count, input_tokens, output_tokens,"
                " cache_read_tokens, cache_write_tokens, cost_total, context_tokens, model, thinking_level,"
                " active_tool_names")
UPSERT_LABEL = (
    "INSERT INTO labels (session_id, target_id, label, entry_seq, position) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (session_id, target_id) DO UPDATE SET label = excluded.label, entry_seq = excluded.entry_seq"
)
# Whole-session aggregates by increments (every SET expression reads the row as it was).
_NEWER = "(%(ms)s::float8 IS NOT NULL AND (message_ms IS NULL OR %(ms)s::float8 > message_ms))"
ADVANCE_SESSION = (
    "UPDATE session_materialized SET "
    + ", ".join(f"{f} = {f} + %({f})s" for f in rows.STATS_FIELDS)
    + ", name = CASE WHEN %(is_info)s THEN %(name)s ELSE name END"
    ", first_message = CASE WHEN first_message = '' THEN %(first)s ELSE first_message END"
    f", modified_at = CASE WHEN {_NEWER} THEN %(iso)s ELSE modified_at END"
    f", modified_ms = CASE WHEN {_NEWER} THEN %(ms)s::float8 ELSE modified_ms END"
    f", message_ms = CASE WHEN {_NEWER} THEN %(ms)s::float8 ELSE message_ms END"
    " WHERE session_id = %(sid)s"
)
APPENDED_SQL = (
    "SELECT e.entry_seq, e.payload, e.id, CASE WHEN p.entry_seq IS NULL THEN e.parent_id ELSE p.target_id END,"
    " e.type, e.role, e.preview, e.timestamp, l.label, e.status FROM session_entries e"
    " LEFT JOIN session_entries p ON p.session_id = e.session_id AND p.id = e.parent_id AND p.type = 'leaf'"
    " LEFT JOIN labels l ON l.session_id = e.session_id AND l.target_id = e.id"
    " WHERE e.session_id = %s AND e.entry_seq > %s ORDER BY e.entry_seq"
)


def pg_text(value: V) -> V:
    """PostgreSQL text cannot hold NUL; a NUL in an extracted column (a preview, an id from a
    hostile file) becomes U+FFFD. Payloads are JSON, where NUL is always escaped."""
    if isinstance(value, str) and "\x00" in value:
        return cast(V, value.replace("\x00", "\ufffd"))
    return value


def search_key(text: str) -> str:
    """What entry_search holds: the search text in lower case (matched with LIKE, which is
    cheaper than ILIKE on every row the trigram index names; snippets come from the payload)."""
    return pg_text(text).lower()


def clean_row(row: Row) -> Row:
    return tuple(pg_text(v) for v in row)


# Results come in binary (text columns are the same bytes; numbers need no parsing): reading a
# 2,000-entry path is a quarter faster than in text.
async def fetch_one(conn: Conn, sql: str, params: Params = ()) -> TupleRow | None:
    cur = conn.cursor(binary=True)
    await cur.execute(sql, params)
    return await cur.fetchone()


async def fetch_all(conn: Conn, sql: str, params: Params = ()) -> list[TupleRow]:
    cur = conn.cursor(binary=True)
    await cur.execute(sql, params)
    return await cur.fetchall()


async def locate(conn: Conn, sid: str, entry_id: str) -> TupleRow:
    """(seq, branch, depth, ctx_start, *state) of an entry; raises for unknown or cyclic ones."""
    row = await fetch_one(conn, LOCATE_SQL, (sid, entry_id))
    if row is None:
        raise EntryNotFoundError(entry_id)
    if row[1] is None:
        raise InvalidTreeError(f"Entry {entry_id} is on or under a parent cycle; its path has no root")
    return row


async def fresh_id(conn: Conn, sid: str) -> str:
    while True:
        candidate = new_entry_id()
        if await fetch_one(conn, "SELECT 1 FROM session_entries WHERE session_id = %s AND id = %s",
                           (sid, candidate)) is None:
            return candidate


async def _context_start(conn: Conn, sid: str, entry: CompactionEntry, depth: int, parent: TupleRow | None) -> int:
    """Where get_path_to_root_or_compaction starts under this compaction (as in SQLite)."""
    if entry.retained_tail:
        return depth
    if entry.first_kept_entry_id is None or parent is None:
        return 1
    kept = await fetch_one(
        conn, "SELECT m.branch_id, m.depth FROM session_entries e JOIN entry_materialized m ON m.entry_seq ="
        " e.entry_seq WHERE e.session_id = %s AND e.id = %s", (sid, entry.first_kept_entry_id))
    if kept and await fetch_one(conn, ON_PATH_SQL, (parent[1], parent[2], kept[0], kept[1])):
        return int(kept[1])
    return 1


async def append_tx(conn: Conn, sid: str, entry: Entry, leaf_after: str | None,
                    *, only_if_moved: bool = False, move_leaf: bool = True) -> int | None:
    """Store one entry with everything derived from it (inside a transaction); its entry_seq.
    `only_if_moved`: store nothing (and return None) when the leaf is `leaf_after` already (a
    leaf move to where the leaf is). `move_leaf=False`: the stored leaf stays (a run's branch
    elsewhere). In pipeline mode (PgDatabase.write(pipeline=True)) this
    waits for the server once: for the lock and the lookups (sent with BEGIN); the writes go
    with COMMIT."""
    params = {"sid": sid, "id": entry.id, "parent": entry.parent_id}
    await conn.execute(LOCK_SQL, params)
    found = await fetch_one(conn, APPEND_LOOKUP_SQL, params)
    if found is None:
        raise StorageError(f"Session {sid} no longer exists")
    if only_if_moved and found[0] == leaf_after:
        return None
    if found[1]:
        raise DuplicateEntryError(entry.id)
    seq, taken = int(found[-1]), found[-2]
    parent: TupleRow | None = None
    if entry.parent_id is not None:
        if found[2] is None:
            raise EntryNotFoundError(entry.parent_id)
        if found[3] is None:
            raise InvalidTreeError(f"Entry {entry.parent_id} is on or under a parent cycle; its path has no root")
        parent = found[2:-2]
    state = advance_path_state(rows.state_from(parent[2], parent[4:]) if parent else PathState(), entry)
    depth = state.depth
    is_marker = isinstance(entry, LeafEntry)
    extends = parent is not None and not is_marker and not taken
    ctx = parent[3] if parent else 1
    if isinstance(entry, CompactionEntry):
        ctx = await _context_start(conn, sid, entry, depth, parent)
    branch_sql = "%s" if extends else NEW_BRANCH
    branch: list[object] = [parent[1]] if extends and parent is not None else []
    await conn.execute(INSERT_ENTRY, (seq, *clean_row(rows.entry_row(None, sid, entry)[1:])))
    if not extends:
        await conn.execute(
            "INSERT INTO branches (branch_id, session_id, parent_branch_id, fork_depth)"
            " VALUES (nextval('treechat_branch_seq'), %s, %s, %s)",
            (sid, parent[1] if parent else None, parent[2] if parent else 0))
    await conn.execute(f"INSERT INTO branch_entries (branch_id, depth, entry_seq) VALUES ({branch_sql}, %s, %s)",
                       (*branch, depth, seq))
    await conn.execute(
        f"INSERT INTO entry_materialized ({MAT_COLUMNS}) VALUES (%s, {branch_sql}, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s, %s)", (seq, *branch, depth, ctx, *rows.state_values(state)))
    if move_leaf:
        await conn.execute("UPDATE sessions SET active_leaf_id = %s WHERE id = %s", (leaf_after, sid))
    if not is_marker:  # a marker only moves the pointer: not counted, labelled or searchable
        text = search_key(rows.search_text(entry))
        if text:
            await conn.execute("INSERT INTO entry_search (entry_seq, session_id, text) VALUES (%s, %s, %s)",
                               (seq, sid, text))
        if isinstance(entry, LabelEntry):
            if entry.label:
                await conn.execute(UPSERT_LABEL, (sid, entry.target_id, pg_text(entry.label), seq, seq))
            else:
                await conn.execute("DELETE FROM labels WHERE session_id = %s AND target_id = %s",
                                   (sid, entry.target_id))
        await conn.execute(ADVANCE_SESSION, _session_delta(sid, entry))
    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, sid))
    return seq


def _session_delta(sid: str, entry: Entry) -> dict[str, object]:
    stats = advance_stats(SessionStats(), entry)  # additive: the entry's own contribution
    ms = rows.message_ms(entry)
    params: dict[str, object] = dict(zip(rows.STATS_FIELDS, rows.stats_values(stats)))
    params.update(sid=sid, is_info=isinstance(entry, SessionInfoEntry), ms=ms,
                  iso=ms_to_iso(ms) if ms is not None else None,
                  name=pg_text((entry.name or "").strip() or None) if isinstance(entry, SessionInfoEntry) else None,
                  first=pg_text(rows.first_user_text(entry)))
    return params


async def last_seq(conn: Conn, sid: str) -> int:
    row = await fetch_one(conn, "SELECT max(entry_seq) FROM session_entries WHERE session_id = %s", (sid,))
    return int(row[0]) if row and row[0] is not None else 0


class PostgresSessionStorage:
    """Nothing is cached in the object: every read asks the server, so several processes and
    machines share a session."""

    def __init__(self, db: PgDatabase, session_id: str, catalog: PostgresCatalog | None = None,
                 seen_seq: int = 0) -> None:
        self.db = db
        self.session_id = session_id
        self.catalog = catalog
        self._seen_seq = seen_seq  # poll_appended: what was known when this object was made
        self._own: set[int] = set()  # entries this object wrote (never reported back to it)

    async def _one(self, sql: str, *params: object) -> TupleRow | None:
        return await self.db.run(lambda c: fetch_one(c, sql, params))

    async def _all(self, sql: str, *params: object) -> list[TupleRow]:
        return await self.db.run(lambda c: fetch_all(c, sql, params))

    # ------------------------------------------------------------ metadata

    async def get_metadata(self) -> SessionMetadata:
        row = await self._one(
            "SELECT s.created_at, s.cwd, m.name, s.parent_session_id, s.parent_entry_id FROM sessions s"
            " LEFT JOIN session_materialized m ON m.session_id = s.id WHERE s.id = %s", self.session_id)
        if row is None:
            raise StorageError(f"Session {self.session_id} no longer exists")
        return SessionMetadata(id=self.session_id, created_at=row[0], cwd=row[1], name=row[2], path=self.db.shown,
                               parent_session_id=row[3], parent_entry_id=row[4])

    async def get_leaf_id(self) -> str | None:
        row = await self._one("SELECT active_leaf_id FROM sessions WHERE id = %s", self.session_id)
        return row[0] if row else None

    async def get_session_name(self) -> str | None:
        row = await self._one("SELECT name FROM session_materialized WHERE session_id = %s", self.session_id)
        return row[0] if row else None

    async def get_session_stats(self) -> SessionStats:
        row = await self._one(f"SELECT {rows.STATS_COLUMNS} FROM session_materialized WHERE session_id = %s",
                              self.session_id)
        return rows.stats_from(row) if row else SessionStats()

    # ------------------------------------------------------------ writes

    async def create_entry_id(self) -> str:
        return await self.db.run(lambda c: fresh_id(c, self.session_id))

    async def append_entry(self, entry: Entry, *, move_leaf: bool = True) -> None:
        if isinstance(entry, LeafEntry):
            raise StorageError("Leaf entries are written by set_leaf_id, not append_entry")
        seq = await self.db.write(lambda c: append_tx(c, self.session_id, entry, entry.id, move_leaf=move_leaf),
                                  pipeline=True)
        assert seq is not None
        self._own.add(seq)

    async def set_leaf_id(self, leaf_id: str | None) -> None:
        async def tx(c: Conn) -> None:
            while True:  # the lookup checks the target and the marker's new id (redrawn if taken)
                marker = LeafEntry(id=new_entry_id(), parent_id=leaf_id, target_id=leaf_id)
                try:
                    seq = await append_tx(c, self.session_id, marker, leaf_id, only_if_moved=True)
                except DuplicateEntryError:
                    continue
                if seq is not None:
                    self._own.add(seq)
                return

        await self.db.write(tx, pipeline=True)

    # ------------------------------------------------------------ other writers

    async def poll_appended(self) -> AppendedEntries:
        found = await self._all(APPENDED_SQL, self.session_id, self._seen_seq)
        if not found:
            return AppendedEntries()
        self._seen_seq = int(found[-1][0])
        foreign = [r for r in found if r[0] not in self._own]
        self._own = {s for s in self._own if s > self._seen_seq}
        if not foreign:
            return AppendedEntries()
        entries = rows.entries_of([(r[1],) for r in foreign])
        rows_ = [TreeRow(r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]) for r in foreign if r[4] != "leaf"]
        return AppendedEntries(entries, rows_)

    # ------------------------------------------------------------ entries

    async def get_entry(self, entry_id: str) -> Entry | None:
        row = await self._one("SELECT payload FROM session_entries WHERE session_id = %s AND id = %s",
                              self.session_id, entry_id)
        return parse_entry(row[0]) if row else None

    async def find_entries(self, type: str) -> list[Entry]:
        return rows.entries_of(await self._all(
            "SELECT payload FROM session_entries WHERE session_id = %s AND type = %s ORDER BY entry_seq",
            self.session_id, type))

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        if parent_id is None:
            sql = ("SELECT payload FROM session_entries WHERE session_id = %s AND parent_id IS NULL"
                   " AND type <> 'leaf' ORDER BY entry_seq")
            return rows.entries_of(await self._all(sql, self.session_id))
        sql = ("SELECT payload FROM session_entries WHERE session_id = %s AND parent_id = %s AND type <> 'leaf'"
               " ORDER BY entry_seq")
        return rows.entries_of(await self._all(sql, self.session_id, parent_id))

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        cursor = cursor or EntryCursor()

        async def read(c: Conn) -> list[TupleRow]:
            where: list[str] = ["session_id = %s"]
            params: list[object] = [self.session_id]
            for ref, op in ((cursor.after_id, ">"), (cursor.before_id, "<")):
                if ref is not None:
                    found = await fetch_one(c, "SELECT entry_seq FROM session_entries WHERE session_id = %s"
                                            " AND id = %s", (self.session_id, ref))
                    if found is None:
                        raise EntryNotFoundError(ref)
                    where.append(f"entry_seq {op} %s")
                    params.append(found[0])
            if cursor.types is not None:
                where.append("type = ANY(%s)")
                params.append(list(cursor.types))
            order = "DESC" if cursor.newest_first else "ASC"
            limit = f" LIMIT {max(int(cursor.limit), 0)}" if cursor.limit is not None else ""
            sql = f"SELECT payload FROM session_entries WHERE {' AND '.join(where)} ORDER BY entry_seq {order}{limit}"
            return await fetch_all(c, sql, params)

        return rows.entries_of(await self.db.run(read))

    # ------------------------------------------------------------ labels

    async def get_label(self, entry_id: str) -> str | None:
        row = await self._one("SELECT label FROM labels WHERE session_id = %s AND target_id = %s",
                              self.session_id, entry_id)
        return row[0] if row else None

    async def get_labels(self) -> dict[str, str]:
        found = await self._all("SELECT target_id, label FROM labels WHERE session_id = %s ORDER BY position",
                                self.session_id)
        return {r[0]: r[1] for r in found}

    # ------------------------------------------------------------ paths

    async def get_path_state(self, entry_id: str | None) -> PathState:
        if entry_id is None:
            return PathState()
        row = await self.db.run(lambda c: locate(c, self.session_id, entry_id))
        return rows.state_from(row[2], row[4:])

    async def _path(self, leaf_id: str, from_compaction: bool) -> list[Entry]:
        async def read(c: Conn) -> list[TupleRow]:
            _, branch, depth, ctx_start, *_ = await locate(c, self.session_id, leaf_id)
            return await fetch_all(c, PATH_SQL, {"branch": branch, "depth": depth,
                                                 "low": ctx_start if from_compaction else 1})

        return rows.entries_of(await self.db.run(read))

    async def get_path_to_root(self, leaf_id: str) -> list[Entry]:
        return await self._path(leaf_id, False)

    async def get_path_to_root_or_compaction(self, leaf_id: str) -> list[Entry]:
        return await self._path(leaf_id, True)

    async def get_tree_rows(self) -> list[TreeRow]:
        async def read(c: Conn) -> list[TreeRow]:
            labels = {r[0]: r[1] for r in await fetch_all(
                c, "SELECT target_id, label FROM labels WHERE session_id = %s", (self.session_id,))}
            found = await fetch_all(
                c, "SELECT id, parent_id, type, role, preview, timestamp, target_id, status FROM session_entries"
                " WHERE session_id = %s ORDER BY entry_seq", (self.session_id,))
            out: list[TreeRow] = []
            markers: dict[str, str | None] = {}
            new, append, marker, get = tuple.__new__, out.append, markers.get, labels.get
            words: dict[str, str] = {}
            word = words.setdefault
            for i, p, t, r, pv, ts, target, status in found:
                if t == "leaf":
                    markers[i] = target  # not drawn; an entry appended under one hangs under its target
                    continue
                append(new(TreeRow, (i, marker(p, p), word(t, t), r and word(r, r), pv, ts, get(i), status)))
            return out

        return await self.db.run(read)

    async def get_tree_columns(self) -> TreeColumns:
        return columns_from_rows(await self.get_tree_rows())

    async def get_path_rows(self, leaf_id: str) -> list[TreeRow]:
        async def read(c: Conn) -> list[TupleRow]:
            _, branch, depth, ctx_start, *_ = await locate(c, self.session_id, leaf_id)
            return await fetch_all(c, PATH_ROWS_SQL, {"branch": branch, "depth": depth, "low": ctx_start})

        return [TreeRow(*r) for r in await self.db.run(read) if r[2] != "leaf"]

    async def get_entries_by_ids(self, entry_ids: Sequence[str]) -> list[Entry]:
        if not entry_ids:
            return []
        found: dict[str, str] = dict(await self._all("SELECT id, payload FROM session_entries WHERE session_id = %s AND id = ANY(%s)",
                                     self.session_id, list(dict.fromkeys(entry_ids))))
        return rows.entries_of([(found[i],) for i in entry_ids if i in found])

    async def close(self) -> None:
        """The pool belongs to the catalog; closing a session releases nothing."""

