"""kill -9 in the middle of an import, and fuzzed session files: an import is all or nothing, and
whatever a file holds, what was imported builds a context."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.base import StorageError
from treechat.storage.imports.records import read_records

from .helpers import FIXTURES, env, treechat_here


def big_file(path, copies: int) -> int:
    """The v3 fixture repeated with fresh ids: one long session (about 1,000 entries a copy)."""
    lines = (FIXTURES / "large-session.v3.jsonl").read_text().splitlines()
    out, n = [lines[0]], 0
    for k in range(copies):
        for line in lines[1:]:
            obj = json.loads(line)
            obj["id"] = f"{k}-{obj['id']}"
            if obj.get("parentId"):
                obj["parentId"] = f"{k}-{obj['parentId']}"
            elif k:
                obj["parentId"] = f"{k - 1}-{json.loads(lines[-1])['id']}"
            out.append(json.dumps(obj))
            n += 1
    path.write_text("\n".join(out) + "\n")
    return n


def listed(home: list[str]) -> list[Any]:
    """The sessions `treechat sessions --json` lists (asked in this process); none while the store
    cannot answer yet (being made)."""
    done = treechat_here(*home, "sessions", "--json")
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []


def until(condition: Callable[[], bool], seconds: float = 60) -> None:
    """Until `condition` holds (checked every 10 ms), at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _started(proc: subprocess.Popen[bytes], home: Path) -> bool:
    return proc.poll() is not None or _holds_open(proc.pid, home)


def _holds_open(pid: int, folder: Path) -> bool:
    """Process `pid` has a file under `folder` open (the store it imports into)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:  # it is gone, or a descriptor closed meanwhile: ask again
        return False
    return any(link.startswith(f"{folder}{os.sep}") for link in links)


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_kill_9_during_an_import_leaves_all_or_nothing(tmp_path, kind):
    n = big_file(tmp_path / "big.jsonl", 20)
    home = ["--home", str(tmp_path / "home"), "--storage", kind]
    for delay in (0.0, 0.2, 0.4):  # after the importer has the store open: before, during, later in its writes
        proc = subprocess.Popen([sys.executable, "-m", "treechat", *home, "import", "--force", str(tmp_path / "big.jsonl")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
        # (a condition, not a sleep from the start: on a loaded machine that lands in Python's start-up)
        until(partial(_started, proc, tmp_path / "home"))
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rows = json.loads(treechat_here(*home, "sessions", "--json").stdout)
        assert all(r["entryCount"] == n for r in rows), rows  # no partial or empty session
        assert len(rows) <= 1


def mutate(lines: list[str], rng: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 12)):
        i = rng.randrange(1, len(out))
        roll = rng.random()
        if roll < 0.15:
            out[i] = out[i][: rng.randrange(len(out[i]))]  # torn
        elif roll < 0.3:
            b = bytearray(out[i].encode())
            for _ in range(3):
                b[rng.randrange(len(b))] = rng.randrange(32, 127)
            out[i] = b.decode(errors="replace")
        elif roll < 0.4:
            out.insert(i, "[" * rng.choice([10, 3000, 20000]) + "]" * 3)
        elif roll < 0.5:
            out.insert(i, out[rng.randrange(1, len(out))])  # duplicate id
        elif roll < 0.65:
            obj = json.loads(out[i]) if out[i].startswith("{") else None
            if isinstance(obj, dict):
                other = json.loads(out[rng.randrange(1, len(out))]) if out[-1].startswith("{") else {}
                obj["parentId"] = rng.choice([obj.get("id"), other.get("id"), "ghost", None])  # cycles, orphans
                out[i] = json.dumps(obj)
        elif roll < 0.75:
            out.append(json.dumps({"type": "leaf", "id": f"m{i}", "parentId": "ghost", "targetId": "ghost",
                                   "timestamp": "2026-01-01T00:00:00.000Z"}))  # dangling leaf marker
        elif roll < 0.85:
            out.insert(i, json.dumps({"type": "message", "id": f"x{i}", "parentId": None, "message": "not an object"}))
        else:
            out[i] = "\x00\xff garbage " + out[i][:20]
    return out


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "memory"])
async def test_fuzzed_files_import_and_always_build_a_context(tmp_path, kind):
    rng = random.Random(1404)
    base = (FIXTURES / "before-compaction.v3.jsonl").read_text().splitlines()[:300]
    cat = await open_catalog(kind, tmp_path / "home")
    try:
        for case in range(25):
            path = tmp_path / f"f{case}.jsonl"
            path.write_text("\n".join(mutate(base, rng)) + "\n", errors="replace")
            try:
                header, records, report = read_records(path)
            except StorageError:
                continue  # e.g. the header itself was damaged: not a session
            header["id"] = f"fuzz-{case}"
            storage, _ = await cat.import_records(header, records, report)
            session = await Session.open(storage)
            ctx = await session.build_session_context()
            assert isinstance(ctx.messages, list)
            assert len(await storage.get_tree_rows()) <= len(records)
    finally:
        await cat.close()


def test_ctrl_c_during_a_folder_import_says_what_got_in(tmp_path):
    """Each session is whole or absent; the summary says how far it got (it said nothing)."""
    folder = tmp_path / "many"
    folder.mkdir()
    lines = (FIXTURES / "large-session.v3.jsonl").read_text().splitlines()
    for k in range(40):
        head = {**json.loads(lines[0]), "id": f"00000000-0000-4000-8000-{k:012d}"}
        (folder / f"s{k:02d}.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    home = ["--home", str(tmp_path / "home")]
    proc = subprocess.Popen([sys.executable, "-m", "treechat", *home, "import", str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    # Interrupt once the first session is in (a condition, not a fixed sleep: on a loaded machine
    # a sleep can land while Python is still importing, before treechat handles Ctrl+C at all).
    # (the sessions asked in this process: a treechat started per look cost a second each)
    until(lambda: proc.poll() is not None or ((tmp_path / "home" / "treechat.db").exists() and bool(listed(home))))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the import finished before the interrupt (a fast machine)")
    assert proc.returncode == 130 and "Traceback" not in err, err
    summary = next(line for line in err.splitlines() if "imported" in line)
    assert "interrupted after" in summary and "of 40 files" in summary
    rows = json.loads(treechat_here(*home, "sessions", "--json").stdout)
    assert all(r["entryCount"] == len(lines) - 1 for r in rows)  # whole sessions only
    assert sorted(out.split()) == sorted(r["id"] for r in rows)
