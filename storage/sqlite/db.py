"""The database connection: file creation (0600), pragmas, migrations, write transactions.

All multi-statement work runs as ONE plain function on aiosqlite's worker thread (`run`): one
thread hop per operation instead of one per statement (appends stay well under a millisecond),
and because aiosqlite executes queued functions one at a time, a transaction can never
interleave with another coroutine's statements on the shared connection.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import time
from importlib import resources
from pathlib import Path
from typing import Any, Callable, TypeVar

import aiosqlite

from ..base import StorageError
from ..model import parse_entry
from .rows import search_text

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
# WAL checkpoints run beside the writer, never inside an append. SQLite's automatic checkpoint
# (every 1000 WAL pages, about 30 appends) copies those pages into the database and syncs it
# inside the commit that crosses the line: 5-7 ms added to that append, 80 ms for the first
# one after a big import. It is off (wal_autocheckpoint = 0); instead, after every
# CHECKPOINT_EVERY writes a PASSIVE checkpoint runs on a connection of its own in a worker
# thread, which never blocks readers or the writer. The WAL file restarts from its beginning
# at the first write after a checkpoint that caught up (an idle moment: a chat has plenty).
# Under a long unbroken stream of writes that moment never comes and the file would only grow,
# so once it holds WAL_RESTART_FRAMES frames the next write first copies, itself, the few
# frames the worker has not (PASSIVE: it never waits), and its BEGIN then restarts the WAL —
# about 2 ms added to one append in a few hundred. (A RESTART checkpoint in the worker would
# hold writers back while SQLite's busy handler sleeps: 10-100 ms.)
CHECKPOINT_EVERY = 16
WAL_RESTART_FRAMES = 8192  # 32 MiB of 4 KiB pages
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
        return search_text(parse_entry(payload))
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
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # see CHECKPOINT_EVERY
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
        self._writes = 0
        self._checkpoint: asyncio.Future[None] | None = None
        self._checkpoint_conn: sqlite3.Connection | None = None
        self._wal_long = False  # set by the worker: the next write catches up and restarts the WAL

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
        catch_up = self._wal_long and (self._checkpoint is None or self._checkpoint.done())

        def tx(c: sqlite3.Connection) -> T:
            if catch_up:
                self._wal_long = False
                try:
                    c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:
                    pass  # e.g. a worker checkpoint started meanwhile: it catches up instead
            return write_tx(c, lambda c2: fn(c2, *args))

        result = await self.run(tx)
        self._writes += 1
        if self._writes % CHECKPOINT_EVERY == 0 and (self._checkpoint is None or self._checkpoint.done()):
            self._checkpoint = asyncio.get_running_loop().run_in_executor(None, self._checkpoint_wal)
        return result

    def _checkpoint_wal(self) -> None:
        """A PASSIVE checkpoint on a connection of its own (one at a time: see write)."""
        try:
            if self._checkpoint_conn is None:
                self._checkpoint_conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                self._checkpoint_conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            c = self._checkpoint_conn
            _, frames, _ = c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self._wal_long = frames >= WAL_RESTART_FRAMES
        except sqlite3.Error:
            pass  # busy or closing: the next one catches up

    async def close(self) -> None:
        if self._checkpoint is not None:
            await asyncio.wait([self._checkpoint])
        if self._checkpoint_conn is not None:
            self._checkpoint_conn.close()
            self._checkpoint_conn = None
        await self.conn.close()


def loads_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)
