"""Damaged, read-only and full storage: every command answers in one line, never a traceback,
and a damaged database is never written to."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil

import pytest

from .helpers import FIXTURES, can_mount_read_only, one_line, treechat, treechat_here

READ_COMMANDS = [["sessions"], ["search", "hello"], ["context", "abc"], ["tree", "abc"], ["export", "abc"], ["-c"]]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def imported_home(home, storage: str) -> str:
    done = treechat_here("--home", str(home), "--storage", storage, "import", str(FIXTURES / "large-session.v3.jsonl"))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_database_is_named_with_what_to_do_and_never_written(tmp_path, damage):
    imported_home(tmp_path, "sqlite")
    db = tmp_path / "treechat.db"
    for extra in ("treechat.db-wal", "treechat.db-shm"):
        (tmp_path / extra).unlink(missing_ok=True)
    if damage == "garbage":
        db.write_bytes(os.urandom(64 * 1024))
    else:
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    before = digest(db)
    for argv in [*READ_COMMANDS, ["import", str(FIXTURES / "before-compaction.v3.jsonl")]]:
        # in this process but for -c, the app (its process is what a user starts)
        run = treechat if argv == ["-c"] else treechat_here
        line = one_line(run("--home", str(tmp_path), *argv))
        if argv[0] in ("context", "tree", "export") and "damaged" not in line:
            continue  # a truncated file may still open; the session is then simply not found
        assert "damaged" in line and "mv " in line and str(db) in line, (argv, line)
    assert digest(db) == before


@pytest.mark.parametrize("storage", ["sqlite", "jsonl"])
def test_a_read_only_home_browses_and_searches_and_says_why_it_cannot_save(tmp_path, storage):
    why = can_mount_read_only()
    if why:
        pytest.skip(why)
    sid = imported_home(tmp_path, storage)
    base = ["--home", str(tmp_path), "--storage", storage]
    for argv in (["sessions"], ["search", "the"], ["context", sid], ["tree", sid], ["export", sid]):
        done = treechat(*base, *argv, read_only=tmp_path)
        assert done.returncode == 0 and done.stdout and "Traceback" not in done.stderr, (argv, done.stderr)
    line = one_line(treechat(*base, "import", "--force", str(FIXTURES / "large-session.v3.jsonl"), read_only=tmp_path))
    assert "read-only" in line, line


@pytest.mark.parametrize("storage", ["sqlite", "jsonl"])
def test_a_full_disk_is_one_line_and_leaves_no_partial_session(tmp_path, storage):
    home = ["--home", str(tmp_path), "--storage", storage]
    imported_home(tmp_path, storage)
    before = treechat_here(*home, "sessions", "--json").stdout
    size = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    done = treechat(*home, "import", str(FIXTURES / "before-compaction.v3.jsonl"), fsize=size + 64 * 1024)
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "full" in line or "too large" in line.lower(), line
    assert treechat_here(*home, "sessions", "--json").stdout == before  # all or nothing


def test_every_command_on_a_full_disk_is_one_line(tmp_path):
    shutil.copy(FIXTURES / "large-session.v3.jsonl", tmp_path / "s.jsonl")
    done = treechat("--home", str(tmp_path / "h"), "import", str(tmp_path / "s.jsonl"), fsize=4096)
    assert done.returncode == 1 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


APPEND_ON_FULL_DISK = """
import asyncio, resource, signal, sys
from pathlib import Path
from treechat.storage import open_catalog
from treechat.storage.base import StorageWriteError
from treechat.storage.model import MessageEntry, UserMessage

async def main():
    cat = await open_catalog(sys.argv[1], Path(sys.argv[2]))
    s = await cat.open("full")
    used = sum(p.stat().st_size for p in Path(sys.argv[2]).rglob("*") if p.is_file())
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (used + 2048, used + 2048))
    try:
        for i in range(50):
            await s.append_entry(MessageEntry(id=f"big{i}", parent_id=await s.get_leaf_id(),
                                              message=UserMessage(content="x" * 50_000)))
    except StorageWriteError as err:
        print("refused:", err)
    await cat.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("storage", ["sqlite", "jsonl"])
async def test_an_append_on_a_full_disk_is_refused_and_stores_nothing_half(tmp_path, storage):
    import subprocess
    import sys

    from treechat.storage import open_catalog

    from ..storage.helpers import append_all, assistant, user
    from .helpers import env

    cat = await open_catalog(storage, tmp_path)
    s = await cat.create(session_id="full")
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    await cat.close()
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", APPEND_ON_FULL_DISK, storage, str(tmp_path)],
                                   capture_output=True, text=True, env=env(), timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("refused:") and ("full" in done.stdout or "large" in done.stdout), done.stdout
    cat = await open_catalog(storage, tmp_path)
    try:
        s = await cat.open("full")
        entries = [e.id for e in await s.get_entries()]
        assert entries[:2] == ["u1", "a1"] and all(e.startswith("big") for e in entries[2:])
        if storage == "jsonl":
            from treechat.storage.jsonl import JsonlSessionStorage

            assert isinstance(s, JsonlSessionStorage) and s.load_report.skipped == 0  # no torn line was left behind
        await s.append_entry(user("after", await s.get_leaf_id()))  # the session goes on
    finally:
        await cat.close()


READ_ONLY_PROBE = """
import asyncio, sys
from pathlib import Path
from treechat.storage import open_catalog
from treechat.storage.base import ReadOnlyStorageError

async def main():
    cat = await open_catalog(sys.argv[1], Path(sys.argv[2]))
    s = await cat.open("ro")
    print(bool(cat.read_only), len(await s.get_entries()))
    try:
        await s.append_entry((await s.get_entries())[0].model_copy(update={"id": "new1"}))
    except ReadOnlyStorageError as err:
        print("refused:", err)
    print(len((await s.poll_appended()).entries))
    await cat.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("storage", ["sqlite", "jsonl"])
async def test_the_catalog_says_it_is_read_only_and_refuses_writes_with_the_reason(tmp_path, storage):
    import subprocess
    import sys

    from treechat.storage import open_catalog

    from ..storage.helpers import append_all, assistant, user
    from .helpers import env

    why = can_mount_read_only()
    if why:
        pytest.skip(why)
    cat = await open_catalog(storage, tmp_path)
    await append_all(await cat.create(session_id="ro"), user("u1", None), assistant("a1", "u1"))
    assert cat.read_only is None
    await cat.close()
    cmd = ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(tmp_path),
           sys.executable, "-c", READ_ONLY_PROBE, storage, str(tmp_path)]
    done = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, text=True, env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    first, refused, polled = done.stdout.strip().splitlines()
    assert first == "True 2" and refused.startswith("refused:") and "read-only" in refused and polled == "0"


def test_a_database_on_a_full_disk_still_lists_and_searches(tmp_path):
    """A full disk cannot even grow the WAL index an open needs ("disk I/O error"): what is stored
    is opened read-only instead, so sessions, search and export work and sending says why not."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    import subprocess
    import sys

    from .helpers import env

    disk = tmp_path / "disk"
    disk.mkdir()
    run = f"{sys.executable} -m treechat --home {disk}/h"
    script = (f'mount -t tmpfs -o size=20m tmpfs {disk} || exit 77\n'
              f'{run} import {FIXTURES / "before-compaction.v3.jsonl"} >/dev/null 2>&1 || exit 78\n'
              f'dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null\n'
              f'echo "== sessions"; {run} sessions 2>&1\n'
              f'echo "== search"; {run} search "compaction" --limit 1 2>&1\n'
              f'echo "== import"; {run} import --force {FIXTURES / "before-compaction.v3.jsonl"} 2>&1\n')
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, env=env(),
                          timeout=120)
    if done.returncode in (77, 78) or "unshare failed" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()[:200]}")
    listing, search, refused = (part.strip() for part in done.stdout.split("== ")[1:])
    assert "msgs" in listing.splitlines()[1] and "Traceback" not in done.stdout, done.stdout
    assert "No matches" not in search and len(search.splitlines()) == 2, search
    assert "read-only" in refused and "disk is full" in refused, refused
