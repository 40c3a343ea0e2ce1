"""What only the PostgreSQL backend has: URLs and their passwords, connecting (bounded, one line
when it cannot), TLS as the URL asks, migrations, a connection that breaks, text PostgreSQL
cannot hold. The shared behaviour is the conformance suite (test_conformance*.py)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest

from tests.narrow import of
from treechat.storage import open_catalog
from treechat.storage.base import StorageError, StoreChange
from treechat.storage.model import MessageEntry, UserMessage
from treechat.storage.postgres.catalog import PostgresCatalog
from treechat.storage.postgres.url import password_of, redact, scrub, where

from ..pg_cluster import PASSWORD
from .helpers import user

# ---------------------------------------------------------------- URLs (no server needed)


@pytest.mark.parametrize("url, shown", [
    ("postgresql://me:s3cr%40t@db.example:5433/tc?sslmode=verify-full",
     "postgresql://me:***@db.example:5433/tc?sslmode=verify-full"),
    ("postgres://me@db/tc?password=s3cr%40t&sslrootcert=/etc/ca.pem", "postgres://me@db/tc?password=***&sslrootcert=/etc/ca.pem"),
    ("host=db user=me password='s3cr@t' dbname=tc", "host=db user=me password=*** dbname=tc"),
    ("postgresql:///tc?host=/run/postgresql", "postgresql:///tc?host=/run/postgresql"),
])
def test_the_password_is_shown_as_stars_wherever_it_stands(url, shown):
    assert redact(url) == shown
    assert "s3cr" not in redact(url)
    assert password_of(url) in (None, "s3cr@t")
    assert scrub("failed for s3cr@t and s3cr%40t", password_of(url)) == (
        "failed for *** and ***" if password_of(url) else "failed for s3cr@t and s3cr%40t")


def test_where_names_host_port_and_database_without_the_user():
    assert where({"host": "db.example", "port": "5433", "dbname": "tc", "user": "me"}) == "db.example:5433/tc"
    assert where({"host": "/run/postgresql", "port": "5432", "dbname": "tc"}) == "/run/postgresql/.s.PGSQL.5432 (database tc)"


async def test_no_url_and_a_bad_url_are_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("TREECHAT_DATABASE_URL", raising=False)
    with pytest.raises(StorageError, match="needs a server: set TREECHAT_DATABASE_URL"):
        await open_catalog("postgres", tmp_path)
    with pytest.raises(StorageError, match=r"must start with postgresql:// \(not mysql://\)") as err:
        await open_catalog("postgres", tmp_path, database_url="mysql://me:hunter2@db/x")
    assert "hunter2" not in str(err.value)


# ---------------------------------------------------------------- connecting


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_server_that_is_down_is_one_line_at_once(tmp_path):
    started = time.monotonic()
    with pytest.raises(StorageError) as err:
        await open_catalog("postgres", tmp_path, database_url=f"postgresql://me:{PASSWORD}@127.0.0.1:{_closed_port()}/x")
    assert time.monotonic() - started < 5
    message = str(err.value)
    assert "connection refused" in message and "start it" in message and "\n" not in message
    assert PASSWORD not in message


async def test_a_server_that_never_answers_is_given_up_on_after_connect_timeout(tmp_path):
    """A listener that accepts and then says nothing (a firewall, a hung host) on loopback."""
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    started = time.monotonic()
    try:
        with pytest.raises(StorageError, match="did not answer within 1 s"):
            await open_catalog("postgres", tmp_path, database_url=f"postgresql://me@127.0.0.1:{port}/x?connect_timeout=1")
    finally:
        server.close()
    assert time.monotonic() - started < 10  # bounded (libpq may try with and without TLS: two waits)


async def test_a_wrong_password_is_one_line_without_the_password(pg_server, pg_database, tmp_path):
    if not pg_server.own:
        pytest.skip("needs the throw-away cluster (password logins over TCP)")
    url = pg_server.tcp_url(pg_database.name).replace(PASSWORD, "wrong-Zx81")
    with pytest.raises(StorageError, match="refused the login") as err:
        await open_catalog("postgres", tmp_path, database_url=url)
    assert "wrong-Zx81" not in str(err.value) and "~/.pgpass" in str(err.value)


async def _ssl_in_use(url: str, tmp_path) -> bool:
    catalog = await open_catalog("postgres", tmp_path, database_url=url)
    try:
        async def ssl(c):
            cur = await c.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            return (await cur.fetchone())[0]

        return bool(await of(PostgresCatalog, catalog).db.run(ssl))
    finally:
        await catalog.close()


async def test_tls_settings_in_the_url_are_honoured(pg_server, pg_database, tmp_path):
    if not pg_server.own or pg_server.ca_file is None:
        pytest.skip("needs the throw-away cluster with its TLS certificate (openssl)")
    name = pg_database.name
    assert await _ssl_in_use(pg_server.tcp_url(name, sslmode="disable"), tmp_path) is False
    assert await _ssl_in_use(pg_server.tcp_url(name, sslmode="require"), tmp_path) is True
    verified = pg_server.tcp_url(name, sslmode="verify-full", sslrootcert=pg_server.ca_file)
    assert await _ssl_in_use(verified.replace("127.0.0.1", "localhost"), tmp_path) is True
    # trusting only some other certificate: the server's is refused, in one line that says where to look
    stranger = tmp_path / "other-ca.pem"
    await asyncio.to_thread(subprocess.run, ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(stranger), "-days", "1", "-subj",
                    "/CN=somebody else"], check=True, capture_output=True, timeout=60)
    with pytest.raises(StorageError, match="TLS connection to .* failed.*sslrootcert") as err:
        await open_catalog("postgres", tmp_path, database_url=pg_server.tcp_url(
            name, sslmode="verify-full", sslrootcert=str(stranger)).replace("127.0.0.1", "localhost"))
    assert PASSWORD not in str(err.value)


# ---------------------------------------------------------------- migrations


async def test_two_machines_opening_a_new_database_at_once_migrate_it_once(pg_server, monkeypatch, tmp_path):
    from treechat.storage.postgres.db import SCHEMA_VERSION

    name = pg_server.new_database(template=False)
    try:
        if pg_server.own:
            pg_server.sql("CREATE EXTENSION IF NOT EXISTS pg_trgm", name)  # what a database owner may do
        url = pg_server.url(name)
        catalogs = await asyncio.gather(*(open_catalog("postgres", tmp_path, database_url=url) for _ in range(3)))
        try:
            async def versions(c):
                cur = await c.execute("SELECT version FROM treechat_schema ORDER BY version")
                return [r[0] for r in await cur.fetchall()]

            assert await of(PostgresCatalog, catalogs[0]).db.run(versions) == list(range(1, SCHEMA_VERSION + 1))
            s = await catalogs[1].create(session_id="first")
            await s.append_entry(user("u1", None))
            assert [r.id for r in await catalogs[2].list()] == ["first"]
        finally:
            for c in catalogs:
                await c.close()
    finally:
        pg_server.drop_database(name, reuse=False)


async def test_a_schema_newer_than_this_treechat_is_refused(pg_database, tmp_path):
    catalog = await open_catalog("postgres", tmp_path)
    await of(PostgresCatalog, catalog).db.run(lambda c: c.execute("INSERT INTO treechat_schema (version) VALUES (999)"))
    await catalog.close()
    with pytest.raises(StorageError, match="schema is version 999, newer than this treechat"):
        await open_catalog("postgres", tmp_path)


# ---------------------------------------------------------------- a connection that breaks


async def _terminate_others(catalog) -> None:
    async def kill(c):
        await c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND pid <> pg_backend_pid()")

    await catalog.db.run(kill)


async def test_connections_the_server_dropped_are_made_again(pg_database, tmp_path):
    catalog = await open_catalog("postgres", tmp_path)
    killer = await open_catalog("postgres", tmp_path)
    feed = catalog.watch()
    try:
        s = await catalog.create(session_id="kept")
        await s.append_entry(user("u1", None))
        assert of(StoreChange, await feed.next_change(5)).session_ids is None  # listening
        await _terminate_others(killer)  # as a server restart does to every client
        assert [r.id for r in await catalog.list()] == ["kept"]  # a read: retried on a new connection
        await s.append_entry(user("u2", "u1"))  # a write: nothing was sent on the dead one, so retried
        change = None
        for _ in range(20):  # the feed says it lost track, reconnects, and hears the next change
            change = await feed.next_change(1)
            if change is not None and change.session_ids is not None:
                break
            await (await killer.open("kept")).append_entry(user(f"k{_}", "u2"))
        assert change is not None and change.touches("kept")
    finally:
        await feed.close()
        await killer.close()
        await catalog.close()


# ---------------------------------------------------------------- text PostgreSQL cannot hold


async def test_a_nul_character_is_kept_in_the_entry_and_replaced_where_postgresql_cannot_hold_it(pg_database, tmp_path):
    catalog = await open_catalog("postgres", tmp_path)
    try:
        s = await catalog.create()
        await s.append_entry(user("u1", None, "before\x00after nul"))
        assert of(UserMessage, of(MessageEntry, await s.get_entry("u1")).message).content == "before\x00after nul"  # the entry is exact
        assert (await s.get_tree_rows())[0].preview == "before\ufffdafter nul"
        assert [h.entry_id for h in await catalog.search("after nul")] == ["u1"]
        assert (await catalog.list())[0].first_message == "before\ufffdafter nul"
    finally:
        await catalog.close()
