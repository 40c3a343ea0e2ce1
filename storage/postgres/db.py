"""The connection to the server: bounded connects, a small pool, migrations, one-line errors.

Driver: psycopg 3 (its async API and psycopg_pool), chosen over asyncpg 0.32 on measurements
(bench/pg_drivers.py: this 2-core machine, shared and loaded, a local socket; six runs each):
  append (p50 / p99)        asyncpg 2.1-2.6 / 4.6-7.4 ms   psycopg 3.0-3.5 / 5.6-11 ms statement by
                            statement, 1.5-2.1 / 3.5-5.1 ms in pipeline mode (how appends are written
                            here: two round trips; asyncpg has no pipeline mode)
  open + context (a 2,000-entry path read on a pooled connection)
                            asyncpg 6-13 ms                psycopg 9-14 ms (binary results)
  a new connection          asyncpg 3.3-7.7 ms             psycopg 3.6-7.2 ms
The reads are a little slower, the writes faster. What decided it: psycopg goes through libpq, so
every URL parameter works as in psql (TLS modes and certificates, ~/.pgpass, service files,
several hosts, GSSAPI), and it is fully typed (mypy --strict without stubs).

Every wait is bounded: a connect by libpq's connect_timeout (url.DEFAULTS), getting a pooled
connection by CONNECT_WAIT, a lock on a busy session by lock_timeout, and a transaction left
open by a hung client by the server (idle_in_transaction_session_timeout).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..base import ReadOnlyStorageError, StorageError, StorageWriteError
from . import url as urls

T = TypeVar("T")
Conn = psycopg.AsyncConnection[TupleRow]

# psycopg_pool logs failed reconnects as warnings; unconfigured, Python would print them on the
# terminal under the app. Our errors say it once, in words.
logging.getLogger("psycopg").addHandler(logging.NullHandler())
logging.getLogger("psycopg").propagate = False

CONNECT_WAIT = 10.0  # seconds to wait for a connection from the pool
POOL_SIZE = 4
_SESSION_SETTINGS = (
    "SET lock_timeout = '15s'; SET statement_timeout = '120s'; SET idle_in_transaction_session_timeout = '60s'"
)
_MIGRATION_LOCK = 7_203_640_181  # pg_advisory_xact_lock key: one migrating process at a time


def migrations() -> list[tuple[int, str]]:
    """(version, sql) of every migrations/NNN_*.sql, in order (package data)."""
    found = []
    for item in resources.files(__package__).joinpath("migrations").iterdir():
        m = re.match(r"(\d+)_.*\.sql$", item.name)
        if m:
            found.append((int(m.group(1)), item.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = migrations()[-1][0]


def conninfo_for(url: str) -> tuple[str, dict[str, str]]:
    """(the conninfo to connect with, its parameters): the URL with url.DEFAULTS added where it
    says nothing. DatabaseUrlError for a URL libpq cannot read (never repeating it)."""
    urls.check(url)
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    except psycopg.ProgrammingError as err:
        raise urls.DatabaseUrlError(
            f"the database URL cannot be read ({urls.scrub(_first_line(err), urls.password_of(url))})") from None
    for key, value in urls.DEFAULTS.items():
        params.setdefault(key, value)
    return make_conninfo("", **params), params


def _first_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def connect_error(message: str, where: str, params: Mapping[str, str]) -> StorageError:
    """One line for a connection that could not be made (or was lost), with what to do."""
    low = message.lower()
    fix = "fix TREECHAT_DATABASE_URL (or database_url in config.toml)"
    if "refused" in low:
        return StorageError(f"Cannot reach the PostgreSQL server at {where} (connection refused): start it, or {fix}")
    if "timeout expired" in low or "timed out" in low:
        return StorageError(f"The PostgreSQL server at {where} did not answer within {params.get('connect_timeout')} s:"
                            " check the host, the port and the network (connect_timeout=N in the URL waits longer)")
    if "translate host name" in low or "name or service not known" in low or "nodename nor servname" in low:
        return StorageError(f"The database host in {where} is not known: check its spelling, or {fix}")
    if "password" in low or "authentication" in low or "no pg_hba.conf entry" in low or (
            "role" in low and "does not exist" in low):
        return StorageError(f"PostgreSQL at {where} refused the login ({message[:160]}): check the user and the "
                            "password (keep the password in ~/.pgpass or PGPASSWORD rather than in the URL)")
    if "does not exist" in low and "database" in low:
        return StorageError(f"There is no such database at {where}: create it (createdb NAME), or {fix}")
    if "ssl" in low or "certificate" in low or "tls" in low:
        return StorageError(f"The TLS connection to {where} failed ({message[:200]}): check sslmode, sslrootcert "
                            "(and sslcert/sslkey) in the URL")
    if "no such file or directory" in low:
        return StorageError(f"No PostgreSQL server listens at {where}: start it, or {fix}")
    if "closed the connection" in low or "terminating connection" in low or "connection is lost" in low or (
            "the connection is closed" in low):
        return StorageError(f"Lost the connection to PostgreSQL at {where}; the last change may not have been "
                            "stored: check the server, then try again")
    return StorageError(f"Cannot use PostgreSQL at {where}: {message[:300]}")


def translate(err: BaseException, where: str, params: Mapping[str, str], secret: str | None) -> StorageError:
    """One actionable line for what the driver or the server reports (never a traceback, never
    the password)."""
    message = urls.scrub(_first_line(err), secret)
    if isinstance(err, PoolTimeout):
        return StorageError(f"No connection to PostgreSQL at {where} within {CONNECT_WAIT:.0f} s: the server is "
                            "down, unreachable or has no free connection; try again")
    if isinstance(err, pg_errors.ReadOnlySqlTransaction):
        return ReadOnlyStorageError(f"Cannot write: PostgreSQL at {where} is read-only ({message}); browsing "
                                    "and search still work")
    if isinstance(err, (pg_errors.DiskFull, pg_errors.OutOfMemory)):
        return StorageWriteError(f"PostgreSQL at {where} could not store it ({message}); nothing was saved")
    if isinstance(err, pg_errors.LockNotAvailable):
        return StorageError("The session stayed locked by another writer for 15 s; nothing was saved: try again")
    if isinstance(err, pg_errors.QueryCanceled):
        return StorageError(f"PostgreSQL at {where} took too long ({message}); try again")
    if isinstance(err, pg_errors.InsufficientPrivilege):
        return StorageError(f"The database role may not do this at {where} ({message}): grant it the rights on "
                            "treechat's tables, or use the role that created them")
    if isinstance(err, psycopg.OperationalError):
        return connect_error(message, where, params)
    return StorageError(f"PostgreSQL at {where} failed: {message[:300]}")


async def schema_version(conn: Conn) -> int:
    """The version of the schema in this database (0: none yet). One round trip; outside a
    transaction (a missing table is an error, which would end one)."""
    try:
        cur = await conn.execute("SELECT coalesce(max(version), 0) FROM treechat_schema")
    except pg_errors.UndefinedTable:
        return 0
    found = await cur.fetchone()
    return int(found[0]) if found else 0


async def migrate(conn: Conn) -> int:
    """Apply every migration above the database's version, each in one transaction under an
    advisory lock (two machines opening a new database at once apply each exactly once)."""
    current = await schema_version(conn)
    for version, sql in migrations():
        if current >= version:
            continue
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS treechat_schema (version integer NOT NULL)")
            cur = await conn.execute("SELECT coalesce(max(version), 0) FROM treechat_schema")
            row = await cur.fetchone()
            current = int(row[0]) if row else 0
            if current >= version:
                continue  # another process got there first
            await conn.execute(sql.encode())
            await conn.execute("INSERT INTO treechat_schema (version) VALUES (%s)", (version,))
            current = version
    if current > SCHEMA_VERSION:
        raise StorageError(f"The database schema is version {current}, newer than this treechat ({SCHEMA_VERSION}); "
                           "upgrade treechat")
    return current


async def _configure(conn: Conn) -> None:
    await conn.execute(_SESSION_SETTINGS)


def _first_is(first: Conn) -> type[Conn]:
    """A connection class whose first connect() hands out `first` (already made), then connects."""
    spare = [first]

    class FirstReused(psycopg.AsyncConnection[TupleRow]):
        @classmethod
        async def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
            if spare:
                return spare.pop()
            return await psycopg.AsyncConnection.connect(conninfo, **kwargs)

    return FirstReused


class PgDatabase:
    """A pool of autocommit connections; `run` and `write` hand one to a function."""

    def __init__(self, pool: AsyncConnectionPool[Conn], conninfo: str, params: dict[str, str], url: str) -> None:
        self.pool, self.conninfo, self.params = pool, conninfo, params
        self.secret = urls.password_of(url) or params.get("password")
        self.shown = urls.redact(url)  # the URL with *** for its password
        self.where = urls.where(params)
        self.read_only: str | None = None

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> PgDatabase:
        """Connect (bounded), bring the schema up to date (`create`) and open the pool. Every
        failure is a StorageError of one line."""
        try:
            conninfo, params = conninfo_for(url)
        except urls.DatabaseUrlError as err:
            raise StorageError(f"Cannot use the PostgreSQL database: {err}") from None
        where, secret = urls.where(params), urls.password_of(url) or params.get("password")
        try:
            # A direct first connection: a server that is down says so at once, in libpq's words
            # (the pool would retry quietly until its timeout).
            probe = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        except psycopg.Error as err:
            raise translate(err, where, params, secret) from None
        try:
            if create:
                await migrate(probe)
            else:
                version = await schema_version(probe)
                if version != SCHEMA_VERSION:
                    raise StorageError(f"The database at {where} has schema version {version}, this treechat "
                                       f"needs {SCHEMA_VERSION}")
        except psycopg.Error as err:
            raise _setup_error(err, where, params, secret) from None
        except BaseException:
            await probe.close()
            raise
        # The probe becomes the pool's first connection: over a network a connection costs
        # several round trips (TCP, TLS, the login), so opening the store makes only one.
        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            conninfo, connection_class=_first_is(probe), min_size=1, max_size=POOL_SIZE, open=False,
            kwargs={"autocommit": True}, configure=_configure, timeout=CONNECT_WAIT, name="treechat",
            reconnect_timeout=60.0)
        try:
            await pool.open(wait=True, timeout=CONNECT_WAIT)
        except (PoolTimeout, psycopg.Error) as err:
            await pool.close()
            await probe.close()
            raise translate(err, where, params, secret) from None
        return cls(pool, conninfo, params, url)

    def error(self, err: BaseException) -> StorageError:
        return translate(err, self.where, self.params, self.secret)

    async def run(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """fn(connection) on a pooled connection, outside a transaction. Retried once on a
        connection that broke while idle (a server restart): reads have no effect to repeat."""
        for attempt in (0, 1):
            try:
                async with self.pool.connection() as conn:
                    return await fn(conn)
            except psycopg.OperationalError as err:
                if attempt == 0 and _connection_lost(err):
                    continue
                raise self.error(err) from None
            except (psycopg.Error, PoolTimeout) as err:
                raise self.error(err) from None
        raise AssertionError("unreachable")

    async def write(self, fn: Callable[[Conn], Awaitable[T]], *, pipeline: bool = False) -> T:
        """fn(connection) inside one transaction: all of it or none of it. Retried once when the
        connection turns out broken before COMMIT was sent (nothing can have been stored).
        `pipeline`: in pipeline mode (no COPY then): BEGIN goes with fn's first statements and
        COMMIT with its last, so a transaction costs only the round trips fn waits for."""
        for attempt in (0, 1):
            committing = False
            try:
                async with self.pool.connection() as conn:
                    if pipeline:
                        async with conn.pipeline(), conn.transaction():
                            result = await fn(conn)
                            committing = True
                    else:
                        async with conn.transaction():
                            result = await fn(conn)
                            committing = True
                    return result
            except psycopg.OperationalError as err:
                if attempt == 0 and not committing and _connection_lost(err):
                    continue
                raise self.error(err) from None
            except (psycopg.Error, PoolTimeout) as err:
                raise self.error(err) from None
        raise AssertionError("unreachable")

    async def close(self) -> None:
        await self.pool.close()


def _connection_lost(err: psycopg.OperationalError) -> bool:
    low = str(err).lower()
    return any(s in low for s in ("closed the connection", "terminating connection", "connection is closed",
                                  "connection is lost", "consuming input failed", "server conn crashed"))


def _setup_error(err: psycopg.Error, where: str, params: Mapping[str, str], secret: str | None) -> StorageError:
    """Migrations that fail for want of a right say which one and who can give it."""
    message = urls.scrub(_first_line(err), secret)
    if isinstance(err, pg_errors.InsufficientPrivilege) or "permission denied" in message.lower():
        if "extension" in message.lower():
            return StorageError(f"treechat's search needs the pg_trgm extension in the database at {where}, and this "
                                f"role may not create it ({message}): ask its owner to run CREATE EXTENSION pg_trgm")
        return StorageError(f"The database role cannot create treechat's tables at {where} ({message}): use a role "
                            "that owns the database, or ask its owner to grant CREATE")
    if isinstance(err, pg_errors.UndefinedFile) or "pg_trgm" in message and "not available" in message.lower():
        return StorageError(f"The server at {where} lacks the pg_trgm extension treechat's search needs ({message}):"
                            " install the server's contrib package (postgresql-contrib)")
    return translate(err, where, params, secret)
