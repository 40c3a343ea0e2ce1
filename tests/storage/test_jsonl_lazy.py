"""The lazy JSONL backend: opening decodes only the tree fields, bodies are validated when read,
and the catalog lists sessions from a small cache instead of reading every file."""

from __future__ import annotations

import json

import pytest

from treechat.storage.jsonl import JsonlCatalog

from .helpers import T0, append_all, assistant, ids, user

HEADER = {"type": "session", "version": 3, "id": "lazy", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/c"}


def msg(id, parent, content="hi"):
    return {"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": content, "timestamp": T0}}


def write(folder, *rows, name="2026-01-01T00-00-00-000Z_lazy.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
async def cat(tmp_path):
    catalog = JsonlCatalog(tmp_path / "sessions")
    yield catalog
    await catalog.close()


async def test_an_invalid_body_is_found_when_read_counted_and_skipped(cat):
    bad = msg("b1", "u1", content=12345)  # the tree fields are fine; the message is not
    write(cat.directory, HEADER, msg("u1", None), bad, msg("u2", "b1"), msg("u3", "u2"))
    s = await cat.open("lazy")
    assert s.load_report.skipped == 0  # opening did not validate bodies
    assert await s.get_leaf_id() == "u3"
    path = await s.get_path_to_root("u3")
    assert ids(path) == ["u2", "u3"]  # as if the bad line had been skipped at open: u2 is a root
    report = s.load_report
    assert report.skipped_lines == 1 and report.problems[0].startswith("line 3 skipped")
    assert await s.get_entry("b1") is None
    assert "b1" not in [r.id for r in await s.get_tree_rows()]
    assert ids(await s.get_entries()) == ["u1", "u2", "u3"]


async def test_sessions_are_listed_from_the_cache_without_reading_files(cat, monkeypatch):
    s = await cat.create(session_id="cached")
    await append_all(s, user("u1", None, "first words", ms=T0), assistant("a1", "u1", inp=10, out=5))
    await cat.close()
    (row,) = await cat.list()
    assert (row.message_count, row.first_message, row.total_tokens) == (2, "first words", 15)

    fresh = JsonlCatalog(cat.directory)

    def no_reading(*_):
        raise AssertionError("list read a session file")

    monkeypatch.setattr(fresh, "_load", no_reading)
    assert [r.id for r in await fresh.list()] == ["cached"]
    monkeypatch.undo()
    # a file that changed is read again
    other = JsonlCatalog(cat.directory)
    await (await other.open("cached")).append_entry(user("u2", "a1", ms=T0 + 10_000))
    await other.close()
    (row,) = await JsonlCatalog(cat.directory).list()
    assert row.message_count == 3


async def test_cycles_in_a_file_opened_directly_are_broken_in_memory_and_reported(cat):
    """Issue 15: the session always builds a context. The file itself is not changed."""
    write(cat.directory, HEADER, msg("c1", "c2"), msg("c2", "c1"), msg("s1", "s1"), msg("r1", None), msg("r2", "r1"))
    before = (cat.directory / "2026-01-01T00-00-00-000Z_lazy.jsonl").read_bytes()
    s = await cat.open("lazy")
    assert ids(await s.get_path_to_root("c2")) == ["c1", "c2"]  # c1, first of its cycle, is a root
    assert ids(await s.get_path_to_root("s1")) == ["s1"]
    assert ids(await s.get_path_to_root(await s.get_leaf_id())) == ["r1", "r2"]
    assert {r.id: r.parent_id for r in await s.get_tree_rows()} == {"c1": None, "c2": "c1", "s1": None, "r1": None,
                                                                     "r2": "r1"}
    report = s.load_report
    assert report.repaired == 2
    assert report.problems == ["entry c1 closes a parent cycle through c2; it is shown as a root",
                               "entry s1 is its own parent; it is shown as a root"]
    assert (cat.directory / "2026-01-01T00-00-00-000Z_lazy.jsonl").read_bytes() == before


async def test_a_dangling_leaf_marker_is_ignored(cat):
    marker = {"type": "leaf", "id": "m1", "parentId": "ghost", "targetId": "ghost", "timestamp": "2026-01-01T00:00:02.000Z"}
    write(cat.directory, HEADER, msg("u1", None), msg("u2", "u1"), marker)
    s = await cat.open("lazy")
    assert await s.get_leaf_id() == "u2"


async def test_a_bad_file_in_the_folder_is_reported_and_the_others_listed(cat):
    s = await cat.create(session_id="good")
    await s.append_entry(user("u1", None))
    (cat.directory / "2026-01-01T00-00-00-000Z_bad.jsonl").write_text("[" * 100000 + "\n")
    rows = await cat.list()
    assert [r.id for r in rows] == ["good"] and "bad" in cat.problems[0]
    assert (await cat.latest()).session_id == "good"
    assert {h.session_id for h in await cat.search("hello")} == {"good"}


async def test_files_and_folder_are_private(cat):
    s = await cat.create()
    assert s.path.stat().st_mode & 0o777 == 0o600
    assert cat.directory.stat().st_mode & 0o777 == 0o700


async def test_temporary_files_a_killed_writer_left_are_removed_and_a_live_ones_kept(tmp_path):
    import os
    import time

    from treechat.storage.jsonl.catalog import STALE_TEMP_S

    folder = tmp_path / "sessions"
    write(folder, HEADER, msg("a", None))
    stale = folder / ".2026-01-01T00-00-00-000Z_big.jsonl.k3j2.tmp"  # a kill -9 in write_atomic
    live = folder / ".2026-01-01T00-00-00-000Z_other.jsonl.x9q1.tmp"  # an import writing right now
    stale.write_text("half a session")
    live.write_text("being written")
    old = time.time() - STALE_TEMP_S - 60
    os.utime(stale, (old, old))
    catalog = JsonlCatalog(folder)
    try:
        assert [r.id for r in await catalog.list()] == ["lazy"]
    finally:
        await catalog.close()
    assert not stale.exists() and live.exists()
