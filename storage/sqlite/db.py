"""The database connection: file creation (0600), pragmas, migrations, write transactions.

All multi-statement work runs as ONE plain function on aiosqlite's worker thread (`run`): one
thread hop per operation instead of one per statement (appends stay well under a millisecond),
and because aiosqlite executes queued functions one at a time, a transaction can never
interleave with another coroutine's statements on the shared connection.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar, cast

import aiosqlite

from ..base import DamagedStorageError, ReadOnlyStorageError, StorageError, StorageWriteError, write_error
from ..json_types import Json
from ..locks import POLL, LockWait
from ..on_demand import parse_entry
from ..special import special_kind
from .rows import search_text

T = TypeVar("T")
P = ParamSpec("P")


class _Queue(Protocol):
    """aiosqlite's own queue (untyped there): run a function on the connection's thread."""

    def _execute(self, fn: Callable[[], T]) -> Awaitable[T]: ...


def _queue(conn: aiosqlite.Connection) -> _Queue:
    return cast(_Queue, conn)

# SQLite's own wait for a lock, per try. A longer wait is ours (locks.LockWait): bounded by
# lock_timeout, and said on stderr or in the app once it passes half a second (issue 21).
BUSY_TIMEOUT_MS = 500
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
_FULL_BELOW = 1 << 20  # bytes free under which a failing open is taken for a full disk


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
    except ValueError:  # (InvalidEntryError) a payload that no longer validates is simply not searchable
        return ""


def _disk_full(path: Path) -> str | None:
    """Why nothing can be written, when the disk holding `path` is (nearly) full; else None."""
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return None
    return f"the disk is full ({free:,} bytes free)" if free < _FULL_BELOW else None


def create_db_file(path: Path) -> str | None:
    """Create the file with mode 0600 before SQLite touches it (SQLite gives -wal/-shm the same
    mode). Returns why the database can only be read (its folder or file is not writable), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and path.exists():
            return f"{path} is not writable ({err.strerror})"
        raise write_error(err, f"the database {path}") from None
    try:
        if os.fstat(fd).st_size == 0:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    if not os.access(path.parent, os.W_OK):
        return f"its folder {path.parent} is not writable"
    return None


def translate(err: sqlite3.Error, path: Path) -> StorageError:
    """One actionable line for what SQLite reports (never its traceback)."""
    msg = str(err)
    low = msg.lower()
    if "not a database" in low or "malformed" in low or isinstance(err, sqlite3.DatabaseError) and "corrupt" in low:
        return DamagedStorageError(
            f"The database {path} is damaged ({msg}); it was left as it is. Move it aside "
            f"(mv '{path}' '{path}.damaged') and treechat starts a new one, or use --storage jsonl"
        )
    if "readonly" in low or "read-only" in low:
        return ReadOnlyStorageError(f"Cannot write to {path}: it is read-only ({msg}); nothing was saved")
    if "disk is full" in low or "database or disk is full" in low:
        return StorageWriteError(f"Cannot write to {path}: the disk is full; free some space (nothing was saved)")
    if "disk i/o error" in low or "unable to open" in low:
        return StorageWriteError(f"Cannot use the database {path}: {msg}")
    if _is_busy(err) if isinstance(err, sqlite3.OperationalError) else False:
        return StorageError(f"The database {path} stayed locked by another writer; try again")
    return StorageError(f"The database {path} failed: {msg}")


def configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode: a committed append survives the process being killed; only an OS
    # crash or power loss can drop the last transactions (a finished entry must survive kill -9).
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # see CHECKPOINT_EVERY
    conn.create_function("treechat_entry_text", 1, _payload_text, deterministic=True)


def configure_read_only(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only = ON")
    conn.create_function("treechat_entry_text", 1, _payload_text, deterministic=True)


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_header(conn: sqlite3.Connection, path: Path) -> None:
    """A file that is not empty and not a SQLite database is damaged: say so before SQLite (or a
    migration) touches it. A truncated database is caught by the first read (`translate`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError:
        return
    if head and head != _SQLITE_MAGIC:
        raise sqlite3.DatabaseError("file is not a database")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _check_version(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        raise ReadOnlyStorageError(
            f"The database {path} needs an upgrade (schema {version} → {SCHEMA_VERSION}) but is read-only"
        )


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


def _prepare(conn: sqlite3.Connection, path: Path, read_only: str | None) -> None:
    """An opened database checked, configured and migrated: one trip to the connection's thread
    (each trip waits for the thread to be scheduled; on a busy machine that was most of an open)."""
    _check_header(conn, path)
    if read_only:
        configure_read_only(conn)
        _check_version(conn, path)
    else:
        configure(conn)
        migrate(conn, None, path)


def migrate(conn: sqlite3.Connection, target: int | None = None, path: Path | None = None) -> int:
    """Apply every migration above `PRAGMA user_version` (up to `target`), each in its own
    transaction; safe when two processes open a new database at once. Returns the version."""
    target = SCHEMA_VERSION if target is None else target
    current: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if current == SCHEMA_VERSION:
        return current  # the common open: no migration files read (a fifth of an open's thread trip)
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

        write_tx(conn, step, path)
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StorageError(
            f"The database schema is version {current}, newer than this treechat ({SCHEMA_VERSION}); upgrade treechat"
        )
    return current


def _is_busy(err: sqlite3.OperationalError) -> bool:
    msg = str(err).lower()
    return "locked" in msg or "busy" in msg


def write_tx(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], path: Path | None = None) -> T:
    """Run fn inside BEGIN IMMEDIATE … COMMIT: all of it or none of it.

    IMMEDIATE takes the write lock up front, so a second process never fails half-way with a
    stale snapshot. While another process holds the lock, each try waits BUSY_TIMEOUT_MS and the
    wait as a whole is a LockWait: announced, and a StorageLockedError at its bound.
    """
    wait: LockWait | None = None
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as err:
            if not _is_busy(err):
                raise
            wait = wait or LockWait(path or "the database")
            wait.busy()
    try:
        result = fn(conn)
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class Database:
    """One aiosqlite connection; everything goes through `run`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, read_only: str | None = None):
        self.conn = conn
        self.path = path
        self.read_only = read_only  # why nothing can be written, or None
        self._writes = 0
        self._checkpoint: asyncio.Future[None] | None = None
        self._checkpoint_conn: sqlite3.Connection | None = None
        self._wal_long = False  # set by the worker: the next write catches up and restarts the WAL
        self._aside_query = "mode=ro"  # how read_aside opens its connection (immutable: as the main one)

    @classmethod
    async def open(cls, path: Path) -> Database:
        """Open (creating) the database; read-only when its file or folder cannot be written.
        A damaged file raises DamagedStorageError and is never written to."""
        path = Path(path)
        kind = special_kind(path)
        if kind is not None:  # a FIFO blocks SQLite's open, a device is no database (nor a damaged index)
            raise StorageError(f"The database {path} is {kind}, not a file; move it aside (mv '{path}' "
                               f"'{path}.not-a-db') and treechat starts a new one, or use --home DIR")
        read_only = create_db_file(path)
        if read_only:
            return await cls._open_read_only(path, read_only)
        try:
            conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as err:
            raise translate(err, path) from None
        db = cls(conn, path, read_only)
        try:
            await db.run(_prepare, path, read_only)
        except StorageWriteError:
            await conn.close()
            full = _disk_full(path)
            if full is None:
                raise
            # a full disk cannot even grow the WAL index (-shm) an open needs: what is stored can
            # still be read (sessions, search, export); writing says why it cannot
            return await cls._open_read_only(path, full)
        except BaseException:
            await conn.close()
            raise
        return db

    @classmethod
    async def _open_read_only(cls, path: Path, why: str) -> Database:
        """mode=ro needs the WAL index (-shm) to exist or be creatable; in a read-only folder
        without one, the database is opened immutable (it cannot change under us: no writer can
        create the files either)."""
        last: StorageError | None = None
        for query in ("mode=ro", "mode=ro&immutable=1"):
            conn = await aiosqlite.connect(f"file:{path}?{query}", isolation_level=None, uri=True)
            db = cls(conn, path, why)
            db._aside_query = query
            try:
                await db.run(_check_header, path)
                await db.run(configure_read_only)
                await db.run(_check_version, path)
                return db
            except DamagedStorageError:
                await conn.close()
                raise
            except StorageError as err:
                await conn.close()
                last = err
        assert last is not None
        raise last

    async def run(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Call fn(sqlite3_connection, *args) on the connection's thread.

        Uses aiosqlite's queue (`_execute`) directly: its public API is one statement per call.
        SQLite's errors come back as typed StorageErrors (damaged, read-only, disk full).
        """
        conn = self.conn
        wait: LockWait | None = None
        while True:
            try:
                return await _queue(conn)._execute(lambda: fn(conn._conn, *args, **kwargs))
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    error, said = translate(err, self.path), str(err)
                    break
                # another process holds a lock this needs (each try waited BUSY_TIMEOUT_MS): bounded, said
                wait = wait or LockWait(self.path)
                wait.busy()
                await asyncio.sleep(POLL)  # (a lock SQLite will not wait for comes back at once)
            except sqlite3.Error as err:
                error, said = translate(err, self.path), str(err)
                break
        if isinstance(error, DamagedStorageError) and await self._only_search_index_damaged():
            error = DamagedStorageError(
                f"The search index in {self.path} is damaged ({said}); the sessions in it "
                "are intact: run `treechat reindex` to rebuild the index"
            )
        raise error

    async def read_aside(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args,
                         **kwargs: P.kwargs) -> T:
        """Call fn(a read-only connection of its own, *args) on a worker thread: a long read (a
        big session's whole tree) that must not hold up the one connection everything else waits
        on. It reads the database as it was when it began; cancelling it interrupts SQLite."""
        opened: list[sqlite3.Connection] = []

        def work() -> T:
            uri = f"{Path(self.path).resolve().as_uri()}?{self._aside_query}"
            c = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            opened.append(c)
            try:
                configure_read_only(c)
                return fn(c, *args, **kwargs)
            finally:
                c.close()

        try:
            return await asyncio.get_running_loop().run_in_executor(None, work)
        except asyncio.CancelledError:
            for c in opened:
                try:
                    c.interrupt()
                except sqlite3.ProgrammingError:
                    pass  # closed already: the read was done
            raise
        except sqlite3.Error as err:
            raise translate(err, self.path) from None

    async def _only_search_index_damaged(self) -> bool:
        """After SQLite said "malformed": are the database's pages sound (quick_check), so that the
        damage is inside FTS5's own records — derived data `treechat reindex` rebuilds?"""
        conn = self.conn
        try:
            result: list[tuple[str]] = await _queue(conn)._execute(
                lambda: conn._conn.execute("PRAGMA quick_check").fetchall())
        except sqlite3.Error:
            return False
        return result == [("ok",)]

    async def write(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like run, inside one write transaction."""
        if self.read_only:
            raise ReadOnlyStorageError(
                f"Cannot save: the database {self.path} is read-only ({self.read_only}); browsing and search still work"
            )
        catch_up = self._wal_long and (self._checkpoint is None or self._checkpoint.done())

        def tx(c: sqlite3.Connection) -> T:
            if catch_up:
                self._wal_long = False
                try:
                    c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:
                    pass  # e.g. a worker checkpoint started meanwhile: it catches up instead
            return write_tx(c, lambda c2: fn(c2, *args, **kwargs), self.path)

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


def loads_or_none(text: str | None) -> Json:
    return None if text is None else json.loads(text)
