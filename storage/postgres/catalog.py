"""PostgresCatalog: every session on one server — create, find, list, rename, fork, delete,
bulk import, search, and the feed of what other machines change. Lists read materialized rows
only, never entries."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from pathlib import Path

from ..base import (
    AmbiguousSessionError,
    ImportReport,
    SearchHit,
    SessionNotFoundError,
    SessionSummary,
    StorageError,
)
from ..imports.records import ImportRecords, prepare_records, views_of
from ..json_types import SessionHeader
from ..model import Entry, SessionInfoEntry, new_session_id, now_iso
from ..sql import rows
from ..tree.fork import forked_entries
from .bulk import bulk_load, rebuild_search
from .db import Conn, PgDatabase
from .feed import PgChangeFeed
from .search import search
from .storage import CHANNEL, PostgresSessionStorage, append_tx, fetch_all, fetch_one, fresh_id, last_seq, pg_text

_SUMMARY_SQL = (
    "SELECT s.id, s.created_at, m.modified_at, m.name, s.cwd, m.entry_count, m.message_count,"
    " m.total_tokens, m.cost_total, m.first_message, s.parent_session_id, s.parent_entry_id"
    " FROM sessions s JOIN session_materialized m ON m.session_id = s.id"
    " ORDER BY m.modified_ms DESC, s.created_at DESC, s.id DESC"
)


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


async def resolve(conn: Conn, ref: str) -> str:
    if await fetch_one(conn, "SELECT 1 FROM sessions WHERE id = %s", (ref,)):
        return ref
    found = [r[0] for r in await fetch_all(
        conn, "SELECT id FROM sessions WHERE id LIKE %s ORDER BY id LIMIT 6", (_like_prefix(ref),))] if ref else []
    if not found:
        raise SessionNotFoundError(ref)
    if len(found) > 1:
        raise AmbiguousSessionError(ref, found)
    return str(found[0])


async def insert_session(conn: Conn, sid: str, created_at: str, cwd: str, parent_sid: str | None,
                         parent_eid: str | None) -> None:
    if await fetch_one(conn, "SELECT 1 FROM sessions WHERE id = %s", (sid,)):
        raise StorageError(f"A session with id {sid} already exists")
    await conn.execute("INSERT INTO sessions (id, created_at, cwd, parent_session_id, parent_entry_id)"
                       " VALUES (%s, %s, %s, %s, %s)",
                       (pg_text(sid), pg_text(created_at), pg_text(cwd), pg_text(parent_sid), pg_text(parent_eid)))
    await conn.execute("INSERT INTO session_materialized (session_id, modified_at, modified_ms) VALUES (%s, %s, %s)",
                       (pg_text(sid), pg_text(created_at), rows.iso_ms_or_zero(created_at)))
    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, sid))


async def delete_session(conn: Conn, sid: str) -> None:
    # Everything cascades from sessions (the search rows from their entries).
    await conn.execute("DELETE FROM sessions WHERE id = %s", (sid,))
    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, sid))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _header_parent(header: SessionHeader) -> tuple[str | None, str | None]:
    """A fork's origin as a header names it (a copy between stores keeps it)."""
    sid = _text(header.get("parentSessionId"))
    path = _text(header.get("parentSession"))
    if sid is None and path is not None and "_" in Path(path).name:
        sid = Path(path).stem.split("_", 1)[1] or None
    return sid, _text(header.get("parentEntryId"))


class PostgresCatalog:
    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    @classmethod
    async def connect(cls, url: str) -> PostgresCatalog:
        """Connect (waits bounded), migrate the schema, open the pool."""
        return cls(await PgDatabase.open(url))

    @property
    def url(self) -> str:
        """The URL as it may be shown: the password is ***."""
        return self.db.shown

    @property
    def read_only(self) -> str | None:
        return self.db.read_only

    def _storage(self, sid: str, seen_seq: int = 0) -> PostgresSessionStorage:
        return PostgresSessionStorage(self.db, sid, self, seen_seq)

    async def create(self, *, session_id: str | None = None, cwd: str = "", parent_session_id: str | None = None,
                     parent_entry_id: str | None = None) -> PostgresSessionStorage:
        sid = session_id or new_session_id()
        await self.db.write(lambda c: insert_session(c, sid, now_iso(), cwd, parent_session_id, parent_entry_id))
        return self._storage(sid)

    async def open(self, session_ref: str) -> PostgresSessionStorage:
        """By full id or unique prefix (SessionNotFoundError / AmbiguousSessionError)."""
        async def find(c: Conn) -> tuple[str, int]:
            sid = await resolve(c, session_ref)
            return sid, await last_seq(c, sid)

        return self._storage(*await self.db.run(find))

    async def latest(self) -> PostgresSessionStorage | None:
        async def find(c: Conn) -> tuple[str, int] | None:
            row = await fetch_one(c, _SUMMARY_SQL + " LIMIT 1")
            return (row[0], await last_seq(c, row[0])) if row else None

        found = await self.db.run(find)
        return self._storage(*found) if found else None

    async def list(self) -> list[SessionSummary]:
        found = await self.db.run(lambda c: fetch_all(c, _SUMMARY_SQL))
        return [
            SessionSummary(id=r[0], created_at=r[1], modified_at=r[2], name=r[3], cwd=r[4], entry_count=r[5],
                           message_count=r[6], total_tokens=r[7], cost_total=r[8], first_message=r[9],
                           parent_session_id=r[10], parent_entry_id=r[11])
            for r in found
        ]

    async def rename(self, session_ref: str, name: str) -> None:
        async def tx(c: Conn) -> None:
            sid = await resolve(c, session_ref)
            leaf = await fetch_one(c, "SELECT active_leaf_id FROM sessions WHERE id = %s FOR UPDATE", (sid,))
            entry = SessionInfoEntry(id=await fresh_id(c, sid), parent_id=leaf[0] if leaf else None, name=name.strip())
            await append_tx(c, sid, entry, entry.id)

        await self.db.write(tx, pipeline=True)

    async def fork(self, session_ref: str, entry_id: str) -> PostgresSessionStorage:
        source = await self.open(session_ref)
        path = await source.get_path_to_root(entry_id)
        meta = await source.get_metadata()
        labels = await self.db.run(lambda c: fetch_all(
            c, "SELECT l.target_id, l.label, e.timestamp FROM labels l JOIN session_entries e"
            " ON e.entry_seq = l.entry_seq WHERE l.session_id = %s ORDER BY l.position", (source.session_id,)))
        entries = forked_entries(path, labels)
        sid = new_session_id()
        report = ImportReport()
        records = prepare_records(views_of(entries), entries[-1].id if entries else None, report)

        async def tx(c: Conn) -> int:
            await insert_session(c, sid, now_iso(), meta.cwd, source.session_id, entry_id)
            return await bulk_load(c, sid, records, report)

        return self._storage(sid, await self.db.write(tx))

    async def delete(self, session_ref: str) -> None:
        async def tx(c: Conn) -> None:
            await delete_session(c, await resolve(c, session_ref))

        await self.db.write(tx)

    async def import_session(self, header: SessionHeader, entries: Sequence[Entry],
                             leaf_id: str | None) -> tuple[PostgresSessionStorage, ImportReport]:
        report = ImportReport()
        records = prepare_records(views_of(entries), leaf_id, report)
        return await self.import_records(header, records, report)

    async def import_records(self, header: SessionHeader, records: ImportRecords, report: ImportReport, *,
                             replace: bool = False, on_progress: Callable[[int], None] | None = None
                             ) -> tuple[PostgresSessionStorage, ImportReport]:
        """One transaction: the session with all its entries, or nothing. `replace` deletes a
        session with the same id in the same transaction."""
        records.check()
        wanted = _text(header.get("id"))
        created = _text(header.get("timestamp")) or now_iso()
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
        parent_sid, parent_eid = _header_parent(header)

        async def tx(c: Conn) -> tuple[str, int]:
            await c.execute("SET LOCAL statement_timeout = 0")  # a 100k-entry COPY may take a while
            sid = wanted or new_session_id()
            if replace:
                await delete_session(c, sid)
            await insert_session(c, sid, created, str(cwd), parent_sid, parent_eid)
            return sid, await bulk_load(c, sid, records, report, on_progress)

        return self._storage(*await self.db.write(tx)), report

    async def has_session(self, session_id: str) -> bool:
        found = await self.db.run(lambda c: fetch_one(c, "SELECT 1 FROM sessions WHERE id = %s", (session_id,)))
        return found is not None

    async def search(self, query: str, *, session_id: str | None = None,
                     limit: int = 50, further: int = 0) -> builtins.list[SearchHit]:
        if further > 0:
            return []  # every search here looks at every entry (pg_trgm): nothing is further back

        async def read(c: Conn) -> builtins.list[SearchHit]:
            sid = await resolve(c, session_id) if session_id is not None else None
            return await search(c, query, sid, limit)

        return await self.db.run(read)

    async def rebuild_search_index(self, on_progress: Callable[[int], None] | None = None) -> tuple[int, int]:
        """The search rows written again from the stored entries, in one transaction (a rebuild
        that is interrupted leaves the old ones). Returns (entries read, entries indexed)."""
        return await self.db.write(lambda c: rebuild_search(c, on_progress))

    def watch(self) -> PgChangeFeed:
        return PgChangeFeed(self.db)

    async def count_entries(self) -> int:
        row = await self.db.run(lambda c: fetch_one(c, "SELECT count(*) FROM session_entries"))
        return int(row[0]) if row else 0

    async def close(self) -> None:
        await self.db.close()
