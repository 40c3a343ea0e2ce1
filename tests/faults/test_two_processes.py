"""Several processes on one session: nothing lost, nothing rewritten from a stale copy, and each
sees the others' entries (poll_appended) without its own leaf moving."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys

import pytest

from treechat.storage import open_catalog
from treechat.storage.jsonl import JsonlCatalog
from treechat.storage.session_file import read_session_file

from ..storage.helpers import append_all, assistant, user
from .helpers import FIXTURES, env

WRITER = """
import asyncio, sys, time
from pathlib import Path
from treechat.storage import open_catalog
from treechat.storage.model import MessageEntry, UserMessage

async def main():
    kind, home, tag, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    cat = await open_catalog(kind, home)
    s = await cat.open("shared")
    print("ready", flush=True)
    sys.stdin.readline()  # go: both start appending at once
    parent, seen = "root", 0
    for i in range(n):
        entry = MessageEntry(id=f"{tag}{i:04d}", parent_id=parent, message=UserMessage(content=f"{tag} {i}"))
        await s.append_entry(entry)
        parent = entry.id
        seen += len((await s.poll_appended()).entries)
    deadline = time.monotonic() + 60
    while seen < n and time.monotonic() < deadline:  # the other may still be writing
        seen += len((await s.poll_appended()).entries)
        time.sleep(0.01)
    if kind == "jsonl":
        assert await s.get_leaf_id() == parent  # the other's entries never moved our leaf
    print(seen)
    await cat.close()

asyncio.run(main())
"""


def _race(commands: list[list[str]]) -> tuple[list[int], list[tuple[str, str]]]:
    """Start the writers, wait until each says it is ready (a line on its stdout), then tell all
    of them to go at once (a line on stdin); their exit codes and output."""
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env()) for cmd in commands]
    for p in procs:
        assert p.stdout is not None
        p.stdout.readline()  # "ready", or nothing when it failed first (its stderr says why)
    for p in procs:
        assert p.stdin is not None
        try:
            p.stdin.write("\n")
            p.stdin.flush()
        except BrokenPipeError:
            pass
    outs = [p.communicate(timeout=120) for p in procs]
    return [p.returncode for p in procs], outs


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
async def test_two_processes_appending_to_one_session_lose_nothing(tmp_path, kind):
    cat = await open_catalog(kind, tmp_path)
    s = await cat.create(session_id="shared")
    await s.append_entry(user("root", None))
    await cat.close()
    n = 150
    codes, outs = await asyncio.to_thread(_race, [[sys.executable, "-c", WRITER, kind, str(tmp_path), tag, str(n)]
                                                  for tag in ("a", "b")])
    assert codes == [0, 0], [o[1][-800:] for o in outs]
    # each saw every entry of the other (its polls folded them in as they came)
    assert [int(o[0].split()[-1]) for o in outs] == [n, n]
    cat = await open_catalog(kind, tmp_path)
    try:
        entries = await (await cat.open("shared")).get_entries()
        got = [e.id for e in entries if e.type != "leaf"]
        assert sorted(got) == sorted(["root"] + [f"{t}{i:04d}" for t in "ab" for i in range(n)])
    finally:
        await cat.close()
    if kind == "jsonl":
        (path,) = (tmp_path / "sessions").glob("*_shared.jsonl")
        _, _, _, report = read_session_file(path)
        assert report.skipped == 0  # no torn or interleaved line


APPENDER = """
import asyncio, sys
from pathlib import Path
from treechat.storage.jsonl import JsonlCatalog
from treechat.storage.model import MessageEntry, UserMessage

async def main():
    cat = JsonlCatalog(Path(sys.argv[1]))
    s = await cat.open("old-1")
    leaf = await s.get_leaf_id()
    await s.append_entry(MessageEntry(id="printed", parent_id=leaf, message=UserMessage(content="from print mode")))
    print(leaf)

asyncio.run(main())
"""


async def test_a_v1_file_migrated_by_another_process_is_not_rewritten_from_a_stale_copy(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    lines = (FIXTURES / "large-session.jsonl").read_text().splitlines()
    header = {**json.loads(lines[0]), "id": "old-1"}
    path = folder / "2025-01-01T00-00-00-000Z_old-1.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    app = JsonlCatalog(folder)
    mine = await app.open("old-1")  # the app holds the v1 file, migrated in memory only
    leaf = await mine.get_leaf_id()
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", APPENDER, str(folder)], capture_output=True,
                                   text=True, env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == leaf  # both processes gave the v1 entries the same ids
    assert (await mine.poll_appended()).entries[0].id == "printed"
    await mine.append_entry(assistant("answered", leaf))  # the app's next message
    head, entries, _, report = read_session_file(path)
    ids = [e.id for e in entries]
    assert head["version"] == 3 and report.migrated_from is None
    assert "printed" in ids and "answered" in ids and len(ids) == len(set(ids)) == len(lines) - 1 + 2
    assert await mine.get_leaf_id() == "answered"
    await app.close()


async def test_a_fork_of_a_running_session_keeps_every_entry(tmp_path):
    shutil.copy(FIXTURES / "large-session.v3.jsonl", tmp_path / "x.jsonl")
    cat = JsonlCatalog(tmp_path / "sessions")
    s = await cat.create(session_id="f")
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    other = JsonlCatalog(tmp_path / "sessions")
    theirs = await other.open("f")
    await theirs.append_entry(user("u2", "a1"))
    fork = await cat.fork("f", "u2")  # the fork sees what the other process wrote
    assert [e.id for e in await fork.get_path_to_root("u2")] == ["u1", "a1", "u2"]
    await other.close()
    await cat.close()
