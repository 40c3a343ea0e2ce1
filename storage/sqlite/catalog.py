"""SqliteCatalog: every session of one database file — create, find, list, rename, fork,
delete, bulk import and search. Lists read materialized rows only, never entries."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from ..base import (
    AmbiguousSessionError,
    ImportReport,
    SearchHit,
    SessionNotFoundError,
    SessionSummary,
    StorageError,
)
from ..imports.records import ImportRecords, prepare_records, views_of
from ..imports.stream_scan import FilePlan
from ..json_types import SessionHeader
from ..model_lite import new_session_id, now_iso
from ..sql import rows
from ..tree.fork import forked_entries
from . import fts
from .bulk import bulk_load
from .db import Database
from .feed import SqliteChangeFeed
from .reindex import entry_count, rebuild_search
from .search import search_tx
from .storage import SqliteSessionStorage, _fresh_id, append_tx, last_seq
from .stream_import import drop_abandoned, import_plan

if TYPE_CHECKING:  # (annotations only: a streamed import runs without pydantic's models)
    from ..model import Entry

_SUMMARY_SQL = (
    "SELECT s.id, s.created_at, m.modified_at, m.name, s.cwd, m.entry_count, m.message_count,"
    " m.total_tokens, m.cost_total, m.first_message, s.parent_session_id, s.parent_entry_id"
    " FROM sessions s JOIN session_materialized m ON m.session_id = s.id"
    " ORDER BY m.modified_ms DESC, s.created_at DESC, s.id DESC"
)


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _resolve(c: sqlite3.Connection, ref: str) -> str:
    # a session still being imported (import_pid set: stream_import.py) is not there yet
    if c.execute("SELECT 1 FROM sessions WHERE id=? AND import_pid IS NULL", (ref,)).fetchone():
        return ref
    found: list[str] = [r[0] for r in c.execute(
        "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' AND import_pid IS NULL ORDER BY id LIMIT 6",
        (_like_prefix(ref),)
    )] if ref else []
    if not found:
        raise SessionNotFoundError(ref)
    if len(found) > 1:
        raise AmbiguousSessionError(ref, found)
    return found[0]


def _insert_session(
    c: sqlite3.Connection, sid: str, created_at: str, cwd: str, parent_sid: str | None, parent_eid: str | None
) -> None:
    _insert_session_row(c, sid, created_at, cwd, parent_sid, parent_eid)
    c.execute(
        "INSERT INTO session_materialized (session_id, modified_at, modified_ms) VALUES (?, ?, ?)",
        (sid, created_at, rows.iso_ms_or_zero(created_at)),
    )


def _insert_session_row(c: sqlite3.Connection, sid: str, created_at: str, cwd: str, parent_sid: str | None,
                        parent_eid: str | None, import_pid: int | None = None) -> None:
    if c.execute("SELECT 1 FROM sessions WHERE id=?", (sid,)).fetchone():
        raise StorageError(f"A session with id {sid} already exists")
    c.execute(
        "INSERT INTO sessions (id, created_at, cwd, parent_session_id, parent_entry_id, import_pid)"
        " VALUES (?,?,?,?,?,?)",
        (sid, created_at, cwd, parent_sid, parent_eid, import_pid),
    )


def _insert_streamed(c: sqlite3.Connection, sid: str, created_at: str, cwd: str, import_pid: int | None) -> None:
    """The sessions row of a streamed import; its session_materialized row comes with its last batch."""
    _insert_session_row(c, sid, created_at, cwd, None, None, import_pid)


def _delete(c: sqlite3.Connection, sid: str) -> None:
    # The search indexes are not reached by foreign keys; the rest cascades from sessions.
    for table in fts.TABLES:
        c.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT entry_seq FROM session_entries WHERE session_id=?)", (sid,)
        )
    c.execute("DELETE FROM sessions WHERE id=?", (sid,))


class _OpenDescriptor:
    """`SqliteCatalog.open(path)` opens a database; `catalog.open(ref)` opens a session —
    storage.open_catalog and the SessionCatalog protocol both fix the name `open`."""

    @overload
    def __get__(self, obj: None, cls: type[SqliteCatalog]) -> Callable[[Path | str], Coroutine[object, object, SqliteCatalog]]: ...

    @overload
    def __get__(self, obj: SqliteCatalog, cls: type[SqliteCatalog]) -> Callable[[str], Coroutine[object, object, SqliteSessionStorage]]:
        ...

    def __get__(
        self, obj: SqliteCatalog | None, cls: type[SqliteCatalog]
    ) -> Callable[[Path | str], Coroutine[object, object, SqliteCatalog]] | Callable[[str], Coroutine[object, object, SqliteSessionStorage]]:
        if obj is None:
            return cls._open_database
        return obj._open_session


class SqliteCatalog:
    def __init__(self, db: Database):
        self.db = db

    open = _OpenDescriptor()

    @classmethod
    async def _open_database(cls, path: Path | str) -> SqliteCatalog:
        db = await Database.open(Path(path))
        if not db.read_only:
            await drop_abandoned(db, _delete)  # what a killed streamed import left
        return cls(db)

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def read_only(self) -> str | None:
        return self.db.read_only

    def _storage(self, sid: str, seen_seq: int = 0) -> SqliteSessionStorage:
        return SqliteSessionStorage(self.db, sid, self, seen_seq)

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
        def find(c: sqlite3.Connection) -> tuple[str, int]:
            sid = _resolve(c, session_ref)
            return sid, last_seq(c, sid)

        return self._storage(*await self.db.run(find))

    async def latest(self) -> SqliteSessionStorage | None:
        def find(c: sqlite3.Connection) -> tuple[str, int] | None:
            row = c.execute(_SUMMARY_SQL + " LIMIT 1").fetchone()
            return (row[0], last_seq(c, row[0])) if row else None

        found = await self.db.run(find)
        return self._storage(*found) if found else None

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
        from ..model import SessionInfoEntry  # (pydantic: loaded when a session is renamed, not on open)

        def tx(c: sqlite3.Connection) -> None:
            sid = _resolve(c, session_ref)
            leaf = c.execute("SELECT active_leaf_id FROM sessions WHERE id=?", (sid,)).fetchone()[0]
            entry = SessionInfoEntry(id=_fresh_id(c, sid), parent_id=leaf, name=name.strip())
            append_tx(c, sid, entry, entry.id)

        await self.db.write(tx)

    async def fork(self, session_ref: str, entry_id: str) -> SqliteSessionStorage:
        source = await self.open(session_ref)
        path = await source.get_path_to_root(entry_id)
        meta = await source.get_metadata()
        labels = await self.db.run(
            lambda c: c.execute(
                "SELECT l.target_id, l.label, e.timestamp FROM labels l JOIN session_entries e"
                " ON e.entry_seq = l.entry_seq WHERE l.session_id=? ORDER BY l.position",
                (source.session_id,),
            ).fetchall()
        )
        entries = forked_entries(path, labels)
        sid = new_session_id()
        report = ImportReport()
        records = prepare_records(views_of(entries), entries[-1].id if entries else None, report)

        def tx(c: sqlite3.Connection) -> int:
            _insert_session(c, sid, now_iso(), meta.cwd, source.session_id, entry_id)
            bulk_load(c, sid, records, report)
            return last_seq(c, sid)

        return self._storage(sid, await self.db.write(tx))

    async def delete(self, session_ref: str) -> None:
        await self.db.write(lambda c: _delete(c, _resolve(c, session_ref)))

    async def import_session(
        self, header: SessionHeader, entries: Sequence[Entry], leaf_id: str | None
    ) -> tuple[SqliteSessionStorage, ImportReport]:
        report = ImportReport()
        records = prepare_records(views_of(entries), leaf_id, report)
        return await self.import_records(header, records, report)

    async def import_records(
        self,
        header: SessionHeader,
        records: ImportRecords,
        report: ImportReport,
        *,
        replace: bool = False,
        on_progress: Callable[[int], None] | None = None,
    ) -> tuple[SqliteSessionStorage, ImportReport]:
        """One transaction: the session with all its entries, or nothing. `replace` deletes a
        session with the same id in the same transaction."""
        wanted = header.get("id") if isinstance(header.get("id"), str) and header.get("id") else None
        stamp, where = header.get("timestamp"), header.get("cwd")
        created: str = stamp if isinstance(stamp, str) else now_iso()
        cwd: str = where if isinstance(where, str) else ""
        # a fork's origin, as a header written by `treechat copy` names it
        parent_sid, parent_eid = (v if isinstance(v, str) and v else None
                                  for v in (header.get("parentSessionId"), header.get("parentEntryId")))

        def tx(c: sqlite3.Connection) -> tuple[str, int]:
            sid = wanted or new_session_id()
            if replace:
                _delete(c, sid)
            _insert_session(c, sid, created, cwd, parent_sid, parent_eid)
            bulk_load(c, sid, records, report, on_progress)
            return sid, last_seq(c, sid)

        return self._storage(*await self.db.write(tx)), report

    async def has_session(self, session_id: str) -> bool:
        found = await self.db.run(lambda c: c.execute(
            "SELECT 1 FROM sessions WHERE id=? AND import_pid IS NULL", (session_id,)).fetchone())
        return found is not None

    async def import_plan(
        self,
        plan: FilePlan,
        *,
        replace: bool = False,
        on_progress: Callable[[float], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[SqliteSessionStorage, ImportReport]:
        """A planned file (stream_scan.plan_file) stored in batches, all or nothing, in bounded
        memory (stream_import.py); `on_progress(share)` adds up to 1.0; `stop()` is asked between
        batches (ImportStopped: nothing kept)."""
        sid, last, report = await import_plan(
            self.db, plan, insert_session=_insert_streamed, delete_session=_delete, replace=replace,
            on_progress=on_progress, stop=stop)
        return self._storage(sid, last), report

    async def search(
        self, query: str, *, session_id: str | None = None, limit: int = 50, further: int = 0
    ) -> builtins.list[SearchHit]:
        def read(c: sqlite3.Connection) -> builtins.list[SearchHit]:
            sid = _resolve(c, session_id) if session_id is not None else None
            return search_tx(c, query, sid, limit, further)

        return await self.db.run(read)

    async def rebuild_search_index(self, on_progress: Callable[[int], None] | None = None) -> tuple[int, int]:
        """Drop and rebuild the full-text index from the stored entries, in one transaction.
        Returns (entries read, entries indexed); `on_progress(n)` runs on the database thread."""
        return await self.db.write(rebuild_search, on_progress)

    async def count_entries(self) -> int:
        return await self.db.run(entry_count)

    def watch(self) -> SqliteChangeFeed:
        return SqliteChangeFeed(self.db)

    async def close(self) -> None:
        await self.db.close()
