"""`treechat doctor`'s PostgreSQL line: the server named, reachable, its schema, TLS.

Shown when `storage = "postgres"` or a database URL is set. The URL is shown with `***` for
its password; the connection is bounded (DOCTOR_CONNECT_S) and read-only: nothing is created
or migrated, as everywhere in the doctor.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping

from treechat.storage.json_types import JsonObject
from treechat.storage.postgres import INSTALL
from treechat.storage.postgres.url import database_url, password_of, problem, redact, where

from ..config.settings import Settings
from .report import Check

DOCTOR_CONNECT_S = 3


def _local(params: Mapping[str, str]) -> bool:
    host = params.get("host") or params.get("hostaddr") or ""
    if not host or host.startswith("/") or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def postgres_checks(settings: Settings | None, env: Mapping[str, str]) -> list[Check]:
    storage = settings.storage if settings is not None else None
    url = database_url(settings.database_url if settings is not None else None, env)
    if storage != "postgres" and url is None:
        return []
    chosen = "storage = \"postgres\"" if storage == "postgres" else "--storage postgres"
    data: JsonObject = {"chosen": storage == "postgres", "url": redact(url) if url else None,
                            "schema_version": None}
    if url is None:
        return [Check("postgres", "PostgreSQL", "fail", f"{chosen} in config.toml, but no server is named",
                      "set TREECHAT_DATABASE_URL=postgresql://USER@HOST/DB (or database_url in config.toml)", data)]
    found = problem(url)
    if found:
        return [Check("postgres", "PostgreSQL", "fail", f"the database URL {found}",
                      "fix TREECHAT_DATABASE_URL (or database_url in config.toml)", data)]
    try:
        import psycopg
        from psycopg.conninfo import make_conninfo

        from treechat.storage.postgres.db import SCHEMA_VERSION, conninfo_for, schema_version, translate
    except ImportError:
        return [Check("postgres", "PostgreSQL", "fail", f"{redact(url)}: the driver (psycopg) is not installed",
                      INSTALL, data)]
    data["current_version"] = SCHEMA_VERSION
    shown = redact(url)
    try:
        conninfo, params = conninfo_for(url)
    except ValueError as err:
        return [Check("postgres", "PostgreSQL", "fail", str(err), "fix the database URL", data)]
    try:
        wait = min(int(params.get("connect_timeout") or DOCTOR_CONNECT_S), DOCTOR_CONNECT_S)
    except ValueError:
        wait = DOCTOR_CONNECT_S
    quick = make_conninfo(conninfo, connect_timeout=max(wait, 1))
    try:
        # (libpq may try twice: with TLS, then without; each try is bounded by connect_timeout)
        conn = await asyncio.wait_for(psycopg.AsyncConnection.connect(quick, autocommit=True), 2 * wait + 1)
    except (TimeoutError, psycopg.Error) as err:
        message = str(translate(err, where(params), params, password_of(url) or params.get("password")))
        data["error"] = message
        return [Check("postgres", "PostgreSQL", "fail", f"{shown}: cannot connect", message, data)]
    try:
        version = await schema_version(conn)
        sessions = 0
        if version:
            cur = await conn.execute("SELECT count(*) FROM sessions s WHERE EXISTS "
                                     "(SELECT 1 FROM session_entries e WHERE e.session_id = s.id)")
            row = await cur.fetchone()
            sessions = int(row[0]) if row else 0
        tls = bool(conn.pgconn.ssl_in_use)
        server = conn.info.server_version
    except psycopg.Error as err:
        message = str(translate(err, where(params), params, password_of(url)))
        return [Check("postgres", "PostgreSQL", "fail", f"{shown}: cannot be read", message, data)]
    finally:
        await conn.close()
    release = f"{server // 10000}.{server % 10000}"
    data.update(schema_version=version, sessions=sessions, tls=tls, server_version=release)
    facts = [shown, f"PostgreSQL {release}", "TLS" if tls else "no TLS"]
    count = f"{sessions} session{'s' if sessions != 1 else ''}"
    if version > SCHEMA_VERSION:
        return [Check("postgres", "PostgreSQL", "fail", " · ".join([*facts, f"schema v{version}, newer than this "
                      f"treechat (v{SCHEMA_VERSION})"]), "upgrade treechat (pip install -U 'treechat[postgres]')", data)]
    if version == 0:
        return [Check("postgres", "PostgreSQL", "info", " · ".join([*facts, "no treechat tables yet (made on first "
                      "use)"]), data=data)]
    if version < SCHEMA_VERSION:
        return [Check("postgres", "PostgreSQL", "info", " · ".join([*facts, f"schema v{version} · {count}: upgraded "
                      f"to v{SCHEMA_VERSION} when treechat next opens it"]), data=data)]
    if not tls and not _local(params):
        return [Check("postgres", "PostgreSQL", "warn", " · ".join([*facts, f"schema v{version} (current) · {count}"]),
                      "the connection to this server is not encrypted: add sslmode=verify-full (and "
                      "sslrootcert=FILE) to the URL", data)]
    return [Check("postgres", "PostgreSQL", "ok", " · ".join([*facts, f"schema v{version} (current) · {count}"]),
                  data=data)]

