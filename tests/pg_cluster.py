"""A throw-away PostgreSQL cluster for the tests, made once per run (the `pg_server` fixture).

Unless TREECHAT_TEST_DATABASE_URL names a server (a role that may create databases), the
distribution's PostgreSQL (initdb, pg_ctl: /usr/lib/postgresql/*/bin, or on PATH) makes a
cluster in a temporary folder: as root, initdb and the server run as the `postgres` user
(`runuser`), with a data folder it owns. It listens on the folder's unix socket and on
127.0.0.1 at a free port, with TLS (a self-signed certificate made with openssl) and password
logins over TCP, so the TLS and password tests have something real to talk to. fsync is off:
the cluster only lives for the run. It is stopped and removed at the end.

Without PostgreSQL the postgres tests skip, saying why; with TREECHAT_REQUIRE_POSTGRES=1
(.ci/run sets it) they fail instead, so CI never passes without them.
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import psycopg

EXTERNAL = "TREECHAT_TEST_DATABASE_URL"
REQUIRE = "TREECHAT_REQUIRE_POSTGRES"
ROLE, PASSWORD = "treechat_test", "pw-Kq7sZ3vQ"  # the password tests look for this in every output
TEMPLATE = "treechat_template"
TEMPLATE_VERSION: int | None = None  # the schema version the template was migrated to


@dataclass(frozen=True)
class TestDatabase:
    __test__ = False  # not a test class

    name: str
    url: str


class Unavailable(Exception):
    """No server can be had here; the message says why."""


def _bindir() -> Path:
    given = os.environ.get("TREECHAT_PG_BIN")
    candidates = [given] if given else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists():
            return Path(folder)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise Unavailable("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH); "
                      f"install it, or set {EXTERNAL} to a server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """Where the tests' server is and how to make a database on it."""

    admin: str  # a conninfo that may create and drop databases
    socket_dir: str | None = None
    port: int = 0
    ca_file: str | None = None  # the server's self-signed certificate (own cluster only)
    own: bool = False
    root: Path | None = None
    bindir: Path | None = None
    _names: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _free: list[str] = field(default_factory=list)  # emptied databases, ready for the next test
    _admins: dict[str, psycopg.Connection[tuple[object, ...]]] = field(default_factory=dict)

    def url(self, dbname: str) -> str:
        """A URL for the test role: the unix socket (fast) on our cluster, else like `admin`."""
        if self.own:
            return f"postgresql://{ROLE}@/{dbname}?host={self.socket_dir}&port={self.port}"
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(self.admin)
        params["dbname"] = dbname
        return make_conninfo("", **{k: str(v) for k, v in params.items() if v is not None})

    def tcp_url(self, dbname: str, *, password: bool = True, sslmode: str = "disable", **query: str) -> str:
        """Over TCP, with the password in the URL (own cluster only)."""
        assert self.own
        auth = f"{ROLE}:{PASSWORD}" if password else ROLE
        params = "&".join([f"sslmode={sslmode}", *(f"{k}={v}" for k, v in query.items())])
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}?{params}"

    def sql(self, statement: str, dbname: str | None = None) -> None:
        import psycopg

        conninfo = self.admin if dbname is None else _with_db(self.admin, dbname)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(statement.encode())

    def new_database(self, *, template: bool = True) -> str:
        """An empty database: with treechat's schema (`template`), else with nothing in it.
        Schema'd ones are reused (emptied) from test to test: copying a template costs 0.1-0.7 s
        on a busy machine, emptying one 30 ms."""
        if template and self._free:
            return self._free.pop()
        name = f"t_{os.getpid()}_{next(self._names)}"
        owner = f" OWNER {ROLE}" if self.own else ""
        self.sql(f"CREATE DATABASE {name}{' TEMPLATE ' + TEMPLATE if template else ''}{owner}")
        return name

    def drop_database(self, name: str, *, reuse: bool = True) -> None:
        """Done with a database: emptied for the next test when it still has the template's
        schema, else dropped."""
        import psycopg

        if reuse:
            try:
                conn = self._admin_of(name)
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
                             " AND pid <> pg_backend_pid()", (name,))
                version = conn.execute("SELECT max(version) FROM treechat_schema").fetchone()
                if version and version[0] == TEMPLATE_VERSION:
                    conn.execute("SET lock_timeout = '5s'")
                    # everything hangs off sessions (ON DELETE CASCADE): a few rows go faster by
                    # DELETE than TRUNCATE's 20-30 ms, a big import's faster by TRUNCATE
                    many = conn.execute("SELECT count(*) > 5000 FROM (SELECT 1 FROM session_entries LIMIT 5001) n"
                                        ).fetchone()
                    if many and many[0]:
                        tables = [str(r[0]) for r in conn.execute(
                            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                            " AND tablename <> 'treechat_schema'")]
                        conn.execute(("TRUNCATE " + ", ".join(tables)).encode())
                    else:
                        conn.execute("DELETE FROM sessions")
                    self._free.append(name)
                    return
            except psycopg.Error:
                pass  # not what the template made (a test changed it): dropped
        admin = self._admins.pop(name, None)
        if admin is not None:
            admin.close()
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def _admin_of(self, name: str) -> psycopg.Connection[tuple[object, ...]]:
        """A superuser connection to one test database, kept from test to test."""
        import psycopg

        conn = self._admins.get(name)
        if conn is None or conn.closed:
            conn = self._admins[name] = psycopg.connect(_with_db(self.admin, name), autocommit=True)
        return conn


def _with_db(conninfo: str, dbname: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(conninfo)
    params["dbname"] = dbname
    return make_conninfo("", **{k: str(v) for k, v in params.items() if v is not None})


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix initdb and pg_ctl run under, and the uid/gid that must own the folder."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable("running as root and there is no `postgres` user for initdb to run as") from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root without runuser to start PostgreSQL as the postgres user")
    return [runuser, "-u", "postgres", "--"], user.pw_uid, user.pw_gid


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Unavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-600:]}")


def _certificate(folder: Path, uid: int | None, gid: int | None) -> tuple[Path, Path] | None:
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, cert = folder / "server.key", folder / "server.crt"
    _run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
          "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], "openssl")
    os.chmod(key, 0o600)
    if uid is not None and gid is not None:
        os.chown(key, uid, gid)
        os.chown(cert, uid, gid)
    return key, cert


def start_cluster() -> PgServer:
    bindir = _bindir()
    prefix, uid, gid = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="treechat-pg-"))
    try:
        os.chmod(root, 0o755)  # the tests (root or not) reach the socket and the certificate
        data = root / "data"
        if uid is not None and gid is not None:
            os.chown(root, uid, gid)
        tls = _certificate(root, uid, gid)
        initdb = [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8"]
        try:
            _run([*initdb, "--locale=C.UTF-8"], "initdb")
        except Unavailable:
            shutil.rmtree(data, ignore_errors=True)
            _run([*initdb, "--no-locale"], "initdb")
        options = ["-c listen_addresses=127.0.0.1", f"-c unix_socket_directories={root}", "-c fsync=off",
                   "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=200",
                   "-c shared_buffers=64MB", "-c log_min_messages=warning"]
        if tls:
            options += ["-c ssl=on", f"-c ssl_key_file={tls[0]}", f"-c ssl_cert_file={tls[1]}"]
        last: Unavailable | None = None
        for _ in range(3):  # a free port can be taken by someone else before the server binds it
            port = _free_port()
            try:
                _run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w",
                      "-t", "60", "-o", " ".join([f"-p {port}", *options]), "start"], "pg_ctl start")
                break
            except Unavailable as err:
                last = err
        else:
            raise last or Unavailable("pg_ctl start failed")
        server = PgServer(admin=f"host={root} port={port} user=postgres dbname=postgres", socket_dir=str(root),
                          port=port, ca_file=str(tls[1]) if tls else None, own=True, root=root, bindir=bindir)
        server.sql(f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
        return server
    except BaseException:
        stop_cluster_at(root, bindir, prefix)
        raise


def stop_cluster_at(root: Path, bindir: Path, prefix: list[str]) -> None:
    if (root / "data" / "postmaster.pid").exists():
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)


def stop(server: PgServer) -> None:
    for conn in server._admins.values():
        conn.close()
    if server.own and server.root is not None and server.bindir is not None:
        stop_cluster_at(server.root, server.bindir, _as_server_user()[0])


def make_template(server: PgServer) -> None:
    """The template every test database is copied from: treechat's schema, migrated by the
    catalog itself (on a thread of its own: the caller may be inside an event loop)."""
    server.sql(f"DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)")
    server.sql(f"CREATE DATABASE {TEMPLATE}" + (f" OWNER {ROLE}" if server.own else ""))
    if server.own:
        server.sql("CREATE EXTENSION IF NOT EXISTS pg_trgm", TEMPLATE)
    failure: list[BaseException] = []

    def migrate() -> None:
        async def go() -> None:
            from treechat.storage.postgres.catalog import PostgresCatalog

            catalog = await PostgresCatalog.connect(server.url(TEMPLATE))
            await catalog.close()

        try:
            asyncio.run(go())
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(err)

    thread = threading.Thread(target=migrate)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    from treechat.storage.postgres.db import SCHEMA_VERSION

    global TEMPLATE_VERSION
    TEMPLATE_VERSION = SCHEMA_VERSION


def server_or_skip() -> PgServer:
    """The session's server: external, or a new cluster. Skips (or, in CI, fails) without one."""
    external = os.environ.get(EXTERNAL, "").strip()
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the PostgreSQL driver is not installed (pip install -e '.[test]')")
    try:
        server = PgServer(admin=external) if external else start_cluster()
        make_template(server)
    except Unavailable as err:
        _unavailable(str(err))
    return server


def _unavailable(why: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"PostgreSQL is required here ({REQUIRE}=1) but cannot be had: {why}", pytrace=False)
    pytest.skip(f"no PostgreSQL server for the postgres tests: {why}")
