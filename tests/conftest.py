"""Shared fixtures. `catalog`: every storage backend, so storage and session tests run against all.
And the `slow` mark: `pytest -m "not slow"` is the inner loop, the whole suite is CI's."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from treechat.storage import BACKENDS, open_catalog

TESTS = Path(__file__).resolve().parent

# Files (or folders, ending in /) of tests/ whose every test is slow by nature, and why. A slow test
# elsewhere carries @pytest.mark.slow itself; a test on PostgreSQL is slow wherever it is (a cluster).
SLOW: dict[str, str] = {
    "tui/": "the real App through Textual's pilot, with a loopback provider and a home: a second or two each",
    "acp/": "the real `treechat acp` process, driven by an editor's client",
    "mcp/test_print_mcp.py": "real MCP servers as child processes, and `treechat -p` itself",
    "mcp/test_servers.py": "real MCP servers as child processes",
    "protocols/test_rpc_process.py": "the real `treechat --mode rpc` process",
    "protocols/test_cli_modes.py": "the real `treechat` in its protocol modes",
    "packaging/": "a wheel built and installed into a fresh virtualenv",
    "export/test_html_browser.py": "headless Chromium",
    "storage/test_postgres.py": "a PostgreSQL cluster",
    "cli/test_cli_postgres.py": "a PostgreSQL cluster and the real command line",
    "cli/test_cli_imports.py": "each command in a fresh interpreter",
    "faults/test_confirm_typing.py": "sentences typed into every kind of question at a person's pace, in the real App",
    "faults/test_pasted_controls.py": "pastes into the real App",
    "faults/test_hostile_input.py": "huge pastes, queries and replies in the real App",
    "faults/test_kill_and_fuzz.py": "kill -9 at every step, and fuzzed files",
    "faults/test_two_machines.py": "several processes writing one session",
    "faults/test_two_processes.py": "two processes writing one session",
    "faults/test_lock_waits.py": "a lock held by another process until the bounded wait gives up",
    "faults/test_damaged_storage.py": "full disks, damaged databases and read-only homes, through the real command line",
    "faults/test_mcp_bounds.py": "floods and bombs from MCP server processes",
    "widgets/test_transcript_select.py": "thousands of messages and originals in the transcript",
    "widgets/test_model_picker.py": "the picker typed into, key by key, through the pilot",
    "widgets/test_screens.py": "every dialog typed into, key by key, through the pilot",
    "widgets/test_tree_filter.py": "the filter typed into, key by key, through the pilot",
    "test_bench_runs.py": "the benches, run as tests",
    "test_start_imports.py": "the real `treechat` in a terminal",
}
# The App's smoke in the inner loop: quick files of tui/ that stay fast.
FAST: frozenset[str] = frozenset({"tui/test_command_registry.py", "tui/test_status_tokens.py"})


def slow_by_file(relative: str) -> bool:
    if relative in FAST:
        return False
    return any(relative.startswith(name) if name.endswith("/") else relative == name for name in SLOW)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.resolve()
        relative = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and "postgres" in callspec.params.values()
        fixtures = set(getattr(item, "fixturenames", ()))  # a Function's; other items have none
        if slow_by_file(relative) or on_postgres or {"pg_server", "pg_database"} & fixtures:
            item.add_marker(pytest.mark.slow)


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
