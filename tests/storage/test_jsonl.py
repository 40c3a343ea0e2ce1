"""JSONL backend at the file level: what is on disk, corrupt input, Pi's migrations and fixtures."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.fixtures import PI_FIXTURES
from tests.narrow import of
from treechat.storage.base import SessionFileError
from treechat.storage.index import ms_to_iso
from treechat.storage.jsonl import JsonlCatalog, read_session_file, write_session_file
from treechat.storage.model import CompactionEntry, LeafEntry, MessageEntry

from .helpers import T0, append_all, assistant, ids, label, user

FIXTURES = PI_FIXTURES


def lines(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write(path: Path, *rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/c"}


def msg(id, parent, text="hi", role="user"):
    return {"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": role, "content": text, "timestamp": T0}}


@pytest.fixture
async def cat(tmp_path):
    catalog = JsonlCatalog(tmp_path / "sessions")
    yield catalog
    await catalog.close()


# ---------------------------------------------------------------- what we write


async def test_header_written_at_create(cat):
    s = await cat.create(cwd="/proj")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_" + re.escape(s.session_id) + r"\.jsonl", s.path.name)
    (header,) = lines(s.path)
    assert header["type"] == "session" and header["version"] == 3
    assert (header["id"], header["cwd"]) == (s.session_id, "/proj") and header["timestamp"]


async def test_one_line_per_append_and_leaf_marker(cat):
    s = await cat.create()
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    assert [r["type"] for r in lines(s.path)] == ["session", "message", "message"]
    assert lines(s.path)[2]["parentId"] == "u1"
    await s.set_leaf_id("u1")
    assert lines(s.path)[-1] == {**lines(s.path)[-1], "type": "leaf", "parentId": "u1", "targetId": "u1"}


async def test_fork_header_points_at_parent_file(cat):
    s = await cat.create()
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    fork = await cat.fork(s.session_id, "u1")
    header = lines(fork.path)[0]
    assert header["parentSession"] == str(s.path)
    assert (header["parentSessionId"], header["parentEntryId"]) == (s.session_id, "u1")


# ---------------------------------------------------------------- reading what others wrote


async def test_garbage_lines_are_skipped_and_counted(cat):
    cat.directory.mkdir(parents=True)
    write(
        cat.directory / "2026-01-01T00-00-00-000Z_sess-1.jsonl",
        HEADER, msg("u1", None), "not json {", {"type": "message", "id": "bad"}, msg("u1", None, "dup"),
        msg("a1", "u1", "yo", role="user"),
    )
    s = await cat.open("sess-1")
    assert ids(await s.get_entries()) == ["u1", "a1"]
    assert (s.load_report.skipped_lines, s.load_report.duplicate_ids) == (2, 1)
    assert s.load_report.skipped == 3 and len(s.load_report.problems) == 3
    assert "line 3" in s.load_report.problems[0]
    assert (await s.get_entry("u1")).message.content == "hi"


async def test_torn_last_line_does_not_swallow_the_next_append(cat):
    s = await cat.create(session_id="torn")
    await s.append_entry(user("u1", None))
    with open(s.path, "a") as f:  # noqa: ASYNC230  a small local temp file
        f.write('{"type":"message","id":"half')  # killed mid-write
    await cat.close()
    s2 = await cat.open("torn")
    assert s2.load_report.skipped_lines == 1
    await s2.append_entry(assistant("a1", "u1"))
    header, entries, leaf, report = read_session_file(s2.path)
    assert ids(entries) == ["u1", "a1"] and leaf == "a1" and report.skipped_lines == 1


@pytest.mark.parametrize(
    "content, reason",
    [(None, "does not exist"), ("", "is empty"), ("not json\n", "no session header"),
     (json.dumps(msg("u1", None)) + "\n", "no session header")],
)
def test_unreadable_files_raise_a_clear_error(tmp_path, content, reason):
    path = tmp_path / "s.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SessionFileError, match=reason):
        read_session_file(path)


def test_header_and_message(tmp_path):
    header, entries, leaf, report = read_session_file(write(tmp_path / "s.jsonl", HEADER, msg("u1", None)))
    assert header["id"] == "sess-1" and ids(entries) == ["u1"] and leaf == "u1" and report.skipped == 0
    _, entries, _, report = read_session_file(write(tmp_path / "g.jsonl", HEADER, "garbage", msg("u1", None)))
    assert ids(entries) == ["u1"] and report.skipped_lines == 1


def test_trailing_leaf_marker_sets_the_leaf(tmp_path):
    marker = {"type": "leaf", "id": "m1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z", "targetId": "u1"}
    _, entries, leaf, _ = read_session_file(write(tmp_path / "s.jsonl", HEADER, msg("u1", None), msg("a1", "u1"), marker))
    assert leaf == "u1" and isinstance(entries[-1], LeafEntry)


async def test_list_skips_files_that_are_not_sessions(cat):
    s = await cat.create()
    (cat.directory / "2026-01-01T00-00-00-000Z_broken.jsonl").write_text("garbage\n")
    (cat.directory / "notes.txt").write_text("hello")
    assert [r.id for r in await cat.list()] == [s.session_id]
    assert (await cat.latest()).session_id == s.session_id  # the broken file is passed over


# ---------------------------------------------------------------- migration (Pi 0.73.1's migration.test.ts)

V1_HEADER = {"type": "session", "id": "old-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/o"}


def v1_msg(text, role="user"):
    return {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": role, "content": text, "timestamp": 1}}


def test_v1_gets_ids_and_a_chain(tmp_path):
    header, entries, leaf, report = read_session_file(write(tmp_path / "v1.jsonl", V1_HEADER, v1_msg("a"), v1_msg("b")))
    assert header["version"] == 3 and report.migrated_from == 1
    assert all(re.fullmatch(r"[0-9a-f]{8}", e.id) for e in entries)
    assert entries[0].parent_id is None and entries[1].parent_id == entries[0].id and leaf == entries[1].id


def test_v1_first_kept_entry_index_counts_the_header(tmp_path):
    compaction = {"type": "compaction", "timestamp": "2025-01-01T00:00:02.000Z", "summary": "s",
                  "firstKeptEntryIndex": 3, "tokensBefore": 9}
    forward = {**compaction, "firstKeptEntryIndex": 99}
    path = write(tmp_path / "v1.jsonl", V1_HEADER, v1_msg("1"), v1_msg("2"), v1_msg("3"), compaction, forward)
    _, entries, _, _ = read_session_file(path)
    assert of(CompactionEntry, entries[3]).first_kept_entry_id == entries[2].id  # index 3 = the 3rd message
    assert "firstKeptEntryIndex" not in entries[3].model_dump(by_alias=True, exclude_unset=True)
    assert of(CompactionEntry, entries[4]).first_kept_entry_id is None


def test_v2_keeps_ids_and_renames_hook_messages(tmp_path):
    hook = {**msg("h1", "u1"), "message": {"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1}}
    path = write(tmp_path / "v2.jsonl", {**HEADER, "version": 2}, msg("u1", None), hook)
    _, entries, _, report = read_session_file(path)
    assert [(e.id, e.parent_id) for e in entries] == [("u1", None), ("h1", "u1")]
    assert of(MessageEntry, entries[1]).message.role == "custom" and report.migrated_from == 2


async def test_old_file_in_our_folder_is_rewritten_atomically_only_on_write(cat):
    cat.directory.mkdir(parents=True)
    path = write(cat.directory / "2025-01-01T00-00-00-000Z_old-1.jsonl", V1_HEADER, v1_msg("a"), v1_msg("b"))
    before = path.read_bytes()
    s = await cat.open("old-1")
    assert path.read_bytes() == before  # opening alone changes nothing
    await s.append_entry(assistant("n1", await s.get_leaf_id()))
    rows = lines(path)
    assert rows[0]["version"] == 3 and all("id" in r for r in rows[1:]) and rows[-1]["id"] == "n1"


# ---------------------------------------------------------------- modified time (Pi 0.73.1's session-info-modified-timestamp.test.ts)


async def test_modified_is_the_newest_message_not_the_file_mtime(cat):
    s = await cat.create()
    await append_all(s, user("u1", None, ms=T0), assistant("a1", "u1", ms=T0 + 5000))
    os.utime(s.path, (0, 0))
    await cat.close()
    (row,) = await cat.list()
    assert row.modified_at == ms_to_iso(T0 + 5000)


# ---------------------------------------------------------------- Pi's real files


@pytest.mark.parametrize("name", ["large-session", "before-compaction", "large-session.v3", "before-compaction.v3"])
def test_pi_fixtures(name):
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    header, entries, leaf, report = read_session_file(FIXTURES / f"{name}.jsonl")
    assert len(entries) == expected["entryCount"] and report.skipped == 0
    tree = [(n["id"], n["parentId"], n["type"]) for n in expected["tree"]]
    ours = [(e.id, e.parent_id, e.type) for e in entries]
    if name.endswith(".v3"):
        assert sorted(ours, key=str) == sorted(tree, key=str) and leaf == expected["leafId"]
        assert report.migrated_from is None
    else:  # fresh random ids: compare the shape (one linear chain, same types in order)
        assert [t for _, _, t in ours] == [t for _, _, t in tree] and report.migrated_from == 1
        assert all(e.parent_id == (entries[i - 1].id if i else None) for i, e in enumerate(entries))


async def test_fixture_path_to_compaction(cat):
    header, entries, leaf, _ = read_session_file(FIXTURES / "before-compaction.v3.jsonl")
    s, _ = await cat.import_session(header, entries, leaf)
    path = await s.get_path_to_root_or_compaction(leaf)
    assert path[0].id == "7ba6cd9e" and "854e73c3" in ids(path)  # the later compaction's kept range


# ---------------------------------------------------------------- export


async def test_export_round_trip_keeps_entries_and_leaf(cat, tmp_path):
    s = await cat.create()
    await append_all(s, user("u1", None), assistant("a1", "u1"), label("l1", "a1", "u1", "x"), user("u2", "a1"))
    await s.set_leaf_id("a1")
    entries = await s.get_entries()
    out = tmp_path / "export.jsonl"
    write_session_file(out, {"id": s.session_id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": ""}, entries, "u1")
    header, back, leaf, _ = read_session_file(out)
    assert header["version"] == 3 and leaf == "u1"
    assert [e.model_dump() for e in back[: len(entries)]] == [e.model_dump() for e in entries]
    assert isinstance(back[-1], LeafEntry) and back[-1].parent_id == "u1"  # Pi resumes at the last line
    write_session_file(out, {"id": "x"}, entries, "a1")  # already the effective leaf: no marker
    assert len(read_session_file(out)[1]) == len(entries)


async def test_entries_appended_under_a_marker_hang_under_its_target(cat):
    # Pi continuing one of our exports appends under the marker, its last line.
    s = await cat.create()
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    await s.set_leaf_id("u1")
    marker = (await s.find_entries("leaf"))[0]
    await s.append_entry(assistant("p1", marker.id))
    assert ids(await s.get_children("u1")) == ["a1", "p1"]
    assert {r.id: r.parent_id for r in await s.get_tree_rows()}["p1"] == "u1"
    assert ids(await s.get_path_to_root("p1")) == ["u1", marker.id, "p1"]


# ---------------------------------------------------------------- durability

WRITER = """
import asyncio, sys
from pathlib import Path
from treechat.storage.jsonl import JsonlCatalog
from treechat.storage.model import MessageEntry, UserMessage

async def main():
    s = await JsonlCatalog(Path(sys.argv[1])).create(session_id="killed")
    parent = None
    for i in range(10**9):
        entry = MessageEntry(id=f"e{i:07d}", parent_id=parent, message=UserMessage(content="x" * 300))
        await s.append_entry(entry)
        print(entry.id, flush=True)  # reported only once append_entry has returned
        parent = entry.id

asyncio.run(main())
"""


def test_appended_entries_survive_kill_9(tmp_path):
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    reported: list[str] = []
    assert proc.stdout is not None
    try:
        while len(reported) < 300:
            line = proc.stdout.readline()
            assert line, "the writer stopped before it was killed"
            reported.append(line.strip())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    (path,) = tmp_path.glob("*_killed.jsonl")
    _, entries, _, _ = read_session_file(path)
    on_disk = ids(entries)
    assert on_disk[: len(reported)] == reported  # every reported entry, in order, parseable
