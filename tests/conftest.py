"""Shared fixtures. `catalog`: every storage backend, so storage and session tests run against all."""

from __future__ import annotations

import importlib

import pytest

from treechat.storage import BACKENDS, open_catalog


def _available(kind: str) -> bool:
    try:
        module = importlib.import_module(f"treechat.storage.{kind}")
    except ImportError:
        return False
    return getattr(module, "__file__", None) is not None  # not a half-written namespace package


@pytest.fixture(scope="session")
def pg_server():
    """The run's PostgreSQL server (tests/pg_cluster.py): made on first need, removed at the end."""
    from .pg_cluster import server_or_skip, stop

    server = server_or_skip()
    yield server
    stop(server)


@pytest.fixture
def pg_database(request, monkeypatch):
    """A fresh database with treechat's schema on the run's server (`.name`, `.url`);
    TREECHAT_DATABASE_URL names it for this test (so `open_catalog("postgres", …)` and child
    processes reach it). Emptied or dropped after."""
    from .pg_cluster import TestDatabase

    server = request.getfixturevalue("pg_server")
    name = server.new_database()
    database = TestDatabase(name, server.url(name))
    monkeypatch.setenv("TREECHAT_DATABASE_URL", database.url)
    yield database
    server.drop_database(name)


@pytest.fixture(params=[k for k in BACKENDS if k == "postgres" or _available(k)])
async def catalog(request, tmp_path):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")
    cat = await open_catalog(request.param, tmp_path)
    cat.kind = request.param  # type: ignore[attr-defined]
    yield cat
    await cat.close()


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real home folder: skills and prompt templates are looked for in
    ~/.pi, ~/.claude and ~/.agents, which would make a machine's own files part of a test."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("user-home")))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
