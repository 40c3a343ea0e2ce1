"""The database connection: file creation (0600), pragmas, migrations, write transactions.

All multi-statement work runs as ONE plain function on aiosqlite's worker thread (`run`): one
thread hop per operation instead of one per statement (appends stay well under a millisecond),
and because aiosqlite executes queued functions one at a time, a transaction can never
interleave with another coroutine's statements on the shared connection.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from importlib import resources
from pathlib import Path
from typing import Any, Callable, TypeVar

import aiosqlite

from ..aggregates import entry_text
from ..base import StorageError
from ..model import parse_entry

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
_RETRIES = 20  # after the busy timeout itself gave up: only under extreme contention


def migrations() -> list[tuple[int, str]]:
    """(version, sql) of every migrations/NNN_*.sql, in order (package data)."""
    found = []
    for item in resources.files(__package__).joinpath("migrations").iterdir():
        m = re.match(r"(\d+)_.*\.sql$", item.name)
        if m:
            found.append((int(m.group(1)), item.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = migrations()[-1][0]


def _payload_text(payload: str) -> str:
    """SQL function used by migrations to (re)build the search index from stored payloads."""
    try:
        return entry_text(parse_entry(payload))
    except Exception:  # a payload that no longer validates is simply not searchable
        return ""


def create_db_file(path: Path) -> None:
    """Create the file with mode 0600 before SQLite touches it (SQLite gives -wal/-shm the same mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        if os.fstat(fd).st_size == 0:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode: a committed append survives the process being killed; only an OS
    # crash or power loss can drop the last transactions (DESIGN §10 asks for kill -9 safety).
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.create_function("treechat_entry_text", 1, _payload_text, deterministic=True)


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (complete_statement understands triggers' BEGIN…END)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip() and not all(ln.strip().startswith("--") for ln in buf.strip().splitlines()):
        out.append(buf.strip())
    return out


def migrate(conn: sqlite3.Connection, target: int | None = None) -> int:
    """Apply every migration above `PRAGMA user_version` (up to `target`), each in its own
    transaction; safe when two processes open a new database at once. Returns the version."""
    target = SCHEMA_VERSION if target is None else target
    for version, sql in migrations():
        if version > target:
            break
        if conn.execute("PRAGMA user_version").fetchone()[0] >= version:
            continue  # the common case: no write lock is taken just to open

        def step(c: sqlite3.Connection, version: int = version, sql: str = sql) -> None:
            if c.execute("PRAGMA user_version").fetchone()[0] >= version:
                return  # another process got there first
            for stmt in _statements(sql):
                c.execute(stmt)
            c.execute(f"PRAGMA user_version = {version}")

        write_tx(conn, step)
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StorageError(
            f"The database schema is version {current}, newer than this treechat ({SCHEMA_VERSION}); upgrade treechat"
        )
    return current


def _is_busy(err: sqlite3.OperationalError) -> bool:
    msg = str(err).lower()
    return "locked" in msg or "busy" in msg


def write_tx(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run fn inside BEGIN IMMEDIATE … COMMIT: all of it or none of it.

    IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a second
    process never fails half-way with a stale snapshot; if the wait still times out we retry
    a few times with a short back-off before giving up with a StorageError.
    """
    for attempt in range(_RETRIES):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            if not _is_busy(err):
                raise
            time.sleep(min(0.01 * (attempt + 1), 0.2))
            continue
        try:
            result = fn(conn)
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    raise StorageError("The database stayed locked by another writer; try again")


class Database:
    """One aiosqlite connection; everything goes through `run`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path):
        self.conn = conn
        self.path = path

    @classmethod
    async def open(cls, path: Path) -> "Database":
        path = Path(path)
        create_db_file(path)
        conn = await aiosqlite.connect(path, isolation_level=None)
        db = cls(conn, path)
        try:
            await db.run(configure)
            await db.run(migrate)
        except BaseException:
            await conn.close()
            raise
        return db

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Call fn(sqlite3_connection, *args) on the connection's thread.

        Uses aiosqlite's queue (`_execute`) directly: its public API is one statement per call.
        """
        conn = self.conn
        return await conn._execute(lambda: fn(conn._conn, *args))

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Like run, inside one write transaction."""
        return await self.run(lambda c: write_tx(c, lambda c2: fn(c2, *args)))

    async def close(self) -> None:
        await self.conn.close()


def loads_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)
