"""Issue 21 item 4: a lock held by another process is named at once, and the wait is bounded. Before,
`-p` waited 200 s, an import 100 s and a reindex until the lock ended, with nothing on stderr. Now
each says "another treechat process is writing PATH, waiting up to N s" within half a second and
gives up after `lock_timeout` (config.toml) with one line naming the file and the setting; the app
says it in a notice. A JSONL session file's flock waits the same way."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import treechat.storage.locks as locks
from tests.tui.conftest import fake, make_app, screen_text, type_text, wait_for  # noqa: F401  (fixtures)
from treechat.storage import open_catalog
from treechat.storage.locks import StorageLockedError, listen
from treechat.storage.model import MessageEntry, UserMessage
from treechat.widgets.textual_internals import notifications

from .helpers import env

HOLDER = r"""
import fcntl, sqlite3, sys, time
path, kind = sys.argv[1], sys.argv[2]
if kind == "sqlite":
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
else:
    f = open(path, "rb")
    fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


class Holder:
    """Another process holding the write lock of `path` (SQLite's, or a session file's flock)."""

    def __init__(self, path: Path, kind: str = "sqlite") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *_: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("lock_timeout = 1\n")
    done = run(home, "sessions")  # creates the database
    assert done.returncode == 0, done.stderr
    return home


def run(home: Path, *argv: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # the bound here is the test's; the lock's is 1 s (without it a wait took 100 s and more)
    return subprocess.run([sys.executable, "-m", "treechat", "--home", str(home), *argv], capture_output=True,
                          text=True, env={**env(), **(extra_env or {})}, timeout=60, stdin=subprocess.DEVNULL)


def said_and_failed(done: subprocess.CompletedProcess[str], path: Path) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0] == f"treechat: another treechat process is writing {path}, waiting up to 1 s", lines
    assert lines[-1] == (f"treechat: {path} stayed locked by another process for 1 s, so nothing was saved; try "
                         "again once it is done, or raise lock_timeout in config.toml"), lines


def test_reindex_names_the_lock_and_gives_up_at_lock_timeout(home):
    db = home / "treechat.db"
    with Holder(db):
        done = run(home, "reindex")
    said_and_failed(done, db)


def test_import_names_the_lock_and_gives_up_at_lock_timeout(home, tmp_path):
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps({"type": "session", "version": 3, "id": "imp-1", "timestamp": "2025-01-01T00:00:00Z",
                                   "cwd": "/"}) + "\n" + json.dumps(
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}}) + "\n")
    db = home / "treechat.db"
    with Holder(db):
        done = run(home, "import", str(session))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == f"treechat: another treechat process is writing {db}, waiting up to 1 s", lines
    assert "stayed locked by another process for 1 s" in lines[-1] and "raise lock_timeout" in lines[-1]


def test_print_mode_names_the_lock_and_gives_up_at_lock_timeout(home):
    db = home / "treechat.db"
    with Holder(db):
        done = run(home, "-p", "hello", "--model", "openai/gpt-4.1-mini",
                   extra_env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    said_and_failed(done, db)


async def test_a_jsonl_session_file_locked_by_another_process_is_a_bounded_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(locks._policy, "timeout", 0.6)
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        storage = await catalog.create(session_id="held")
        await storage.append_entry(MessageEntry(id="a1", parent_id=None, message=UserMessage(content="one")))
        told: list[str] = []
        path = Path(storage.file)  # type: ignore[attr-defined]
        with Holder(path, "flock"), listen(told.append):
            with pytest.raises(StorageLockedError, match="raise lock_timeout in config.toml"):
                await storage.append_entry(MessageEntry(id="a2", parent_id="a1", message=UserMessage(content="two")))
        assert told == [f"another treechat process is writing {path}, waiting up to 0.6 s"]
        await storage.append_entry(MessageEntry(id="a3", parent_id="a1", message=UserMessage(content="three")))
    finally:
        await catalog.close()


async def test_a_jsonl_wait_leaves_the_event_loop_free(tmp_path, monkeypatch):
    # the app's loop draws the screen and takes keys: a wait for another writer must not stop it
    monkeypatch.setattr(locks._policy, "timeout", 0.6)
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        storage = await catalog.create(session_id="held")
        await storage.append_entry(MessageEntry(id="a1", parent_id=None, message=UserMessage(content="one")))
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                await asyncio.sleep(0.01)
                ticks.append(1)

        with Holder(Path(storage.file), "flock"):  # type: ignore[attr-defined]
            running = asyncio.create_task(ticker())
            try:
                with pytest.raises(StorageLockedError):
                    await storage.append_entry(MessageEntry(id="a2", parent_id="a1", message=UserMessage(content="x")))
                assert ticks, "the loop stood still for the whole wait"
            finally:
                running.cancel()
        assert [e.id for e in await storage.get_entries()] == ["a1"]  # nothing half-written
    finally:
        await catalog.close()


async def test_the_app_says_it_in_a_notice(make_app, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(locks._policy, "timeout", 1.0)
    async with make_app() as (app, pilot):
        await type_text(pilot, "/name a new name")
        holder = sqlite3.connect(tmp_path / "treechat.db", isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        try:
            await pilot.press("enter")
            await wait_for(pilot, lambda: any("another treechat process is writing" in n.message
                                              for n in notifications(app)), what="the notice", rounds=1000)
            await wait_for(pilot, lambda: "stayed locked by" in screen_text(app),
                           what="the failure in the banner", rounds=1000)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert app.is_running  # one line on screen, the app goes on
        await type_text(pilot, "/name a new name")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "a new name" in screen_text(app), what="the name, once the lock is gone")
