"""A big import's search text goes to an index of its own (fts.BULK, issue 26): its segments are
never merged (that was a third of a 100k import's CPU), and every search reads it together with
the index appends use, as if they were one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from treechat.storage.imports.stream_scan import FilePlan, plan_file
from treechat.storage.sqlite import SqliteCatalog, fts, search, stream_import

from .helpers import append_all, user


def session_file(path: Path, sid: str, n: int, word: str, pad: int = 0) -> Path:
    lines = [json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": "/x"})]
    parent = None
    for i in range(n):
        eid = f"{sid}-{i}"
        lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent,
                                 "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                                 "message": {"role": "user", "content": f"{word} number {i}"
                                             + "".join(f" filler{j}.{i}" for j in range(pad)),
                                             "timestamp": 1767225600000 + i}}))
        parent = eid
    path.write_text("\n".join(lines) + "\n")
    return path


def planned(path: Path) -> FilePlan:
    plan = plan_file(path)
    assert plan is not None
    return plan


async def rows_in(cat: SqliteCatalog) -> tuple[int, int]:
    """(rows in the index appends use, rows in the bulk index)."""
    return await cat.db.run(lambda c: c.execute(
        "SELECT (SELECT count(*) FROM entry_search), (SELECT count(*) FROM entry_search_bulk)").fetchone())


async def bulk_levels(cat: SqliteCatalog) -> list[tuple[int, int]] | None:
    return await cat.db.run(lambda c: fts.levels(c, fts.BULK))


@pytest.fixture
def batches_of_10(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_import, "BATCH", 10)


@pytest.fixture
async def cat(tmp_path):
    catalog = await SqliteCatalog.open(tmp_path / "treechat.db")
    yield catalog
    await catalog.close()


async def test_a_big_import_is_indexed_apart_in_few_segments_never_merged(tmp_path, cat, batches_of_10):
    await cat.import_plan(planned(session_file(tmp_path / "big.jsonl", "big", 55, "walrus")))
    assert await rows_in(cat) == (0, 55)
    # 55 entries in batches of 10, the text of 2 batches written at a time: three segments, as written
    assert await bulk_levels(cat) == [(3, 0)]
    s = await cat.open("big")
    await append_all(s, user("later", "big-54", "a walrus appended later"))
    assert await rows_in(cat) == (1, 55)  # appends use the other index
    hits = await cat.search("walrus number 7")
    assert {h.entry_id for h in hits} == {f"big-{i}7" for i in range(1, 5)} | {"big-7"}
    assert {h.entry_id for h in await cat.search("walrus", limit=100)} == {f"big-{i}" for i in range(55)} | {"later"}


async def test_a_file_of_one_batch_is_indexed_where_appends_are(tmp_path, cat, batches_of_10):
    await cat.import_plan(planned(session_file(tmp_path / "small.jsonl", "small", 9, "otter")))
    assert await rows_in(cat) == (9, 0)
    assert [h.entry_id for h in await cat.search("otter number 3")] == ["small-3"]


async def test_broad_and_short_queries_take_the_newest_of_both_indexes(tmp_path, cat, batches_of_10, monkeypatch):
    monkeypatch.setattr(search, "BROAD_MATCHES", 5)  # "walrus" is broad: newest first, not ranked
    await cat.import_plan(planned(session_file(tmp_path / "big.jsonl", "big", 30, "walrus")))
    s = await cat.create(session_id="fresh")  # written after the import: larger entry_seqs
    await append_all(s, user("f1", None, "walrus one xy"), user("f2", "f1", "walrus two xy"))
    broad = await cat.search("walrus", limit=4)
    assert [h.entry_id for h in broad] == ["f2", "f1", "big-29", "big-28"]
    assert {h.rank for h in broad} == {0.0}
    monkeypatch.setattr(search, "SHORT_SCAN", 10)
    short = await cat.search("er", limit=3)  # "numb-er": only the imported entries
    assert [h.entry_id for h in short] == ["big-29", "big-28", "big-27"]
    assert [h.entry_id for h in await cat.search("xy")] == ["f2", "f1"]


async def test_ranks_count_both_indexes(tmp_path, monkeypatch):
    """The same entries give the same ranks whether they sit in one index or are split over two."""
    file = session_file(tmp_path / "big.jsonl", "big", 30, "walrus")
    got = {}
    for name, batch in (("one", 1000), ("two", 10)):
        monkeypatch.setattr(stream_import, "BATCH", batch)
        cat = await SqliteCatalog.open(tmp_path / f"{name}.db")
        try:
            await cat.import_plan(planned(file))
            s = await cat.create(session_id="fresh")
            await append_all(s, user("f1", None, "walrus number 1 walrus"), user("f2", "f1", "numbers"))
            got[name] = [[(h.entry_id, h.rank) for h in await cat.search(q)]
                         for q in ("walrus number 1", "number 2", '"walrus number"')]
            assert (await rows_in(cat))[1] == (0 if name == "one" else 30)
        finally:
            await cat.close()
    assert got["one"] == got["two"] and all(got["one"])


async def test_deleting_an_imported_session_empties_its_index(tmp_path, cat, batches_of_10):
    await cat.import_plan(planned(session_file(tmp_path / "big.jsonl", "big", 25, "walrus")))
    await cat.import_plan(planned(session_file(tmp_path / "other.jsonl", "other", 25, "heron")))
    await cat.delete("big")
    assert await rows_in(cat) == (0, 25)
    assert await cat.search("walrus") == [] and len(await cat.search("heron", limit=100)) == 25


async def test_the_bulk_index_is_merged_once_it_holds_many_segments(tmp_path, cat, batches_of_10, monkeypatch):
    monkeypatch.setattr(fts, "BULK_SEGMENTS", 4)
    monkeypatch.setattr(stream_import, "SEARCH_BATCHES", 1)  # a segment per batch
    await cat.import_plan(planned(session_file(tmp_path / "a.jsonl", "a", 55, "walrus", pad=60)))
    levels = await bulk_levels(cat)
    assert levels is not None and not any(n >= 4 or merging for n, merging in levels)
    assert sum(n for n, _ in levels) == 1  # six segments merged into one
    await cat.import_plan(planned(session_file(tmp_path / "b.jsonl", "b", 25, "heron")))
    # below the cap: the new ones stay as written (FTS5 would move an older segment no bigger
    # than a new one back to level 0, to be merged with them next time: not this big one)
    assert await bulk_levels(cat) == [(3, 0), (1, 0)]
    assert len(await cat.search("walrus", limit=100)) == 55 and len(await cat.search("heron", limit=100)) == 25


async def test_reindex_puts_everything_in_the_index_appends_use(tmp_path, cat, batches_of_10):
    await cat.import_plan(planned(session_file(tmp_path / "big.jsonl", "big", 25, "walrus")))
    before = [(h.entry_id, h.rank) for h in await cat.search("walrus number 2")]
    assert await cat.rebuild_search_index() == (25, 25)
    assert await rows_in(cat) == (25, 0)
    assert [(h.entry_id, h.rank) for h in await cat.search("walrus number 2")] == before
    await cat.import_plan(planned(session_file(tmp_path / "next.jsonl", "next", 25, "heron")))
    assert await rows_in(cat) == (25, 25)  # the bulk index was made again, empty, with its settings


async def test_a_version_7_database_gains_the_bulk_index(tmp_path, batches_of_10):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    await cat.close()
    c = sqlite3.connect(path)
    c.execute("DROP TABLE entry_search_bulk")
    c.execute("PRAGMA user_version = 7")
    c.commit()
    c.close()
    cat = await SqliteCatalog.open(path)
    try:
        config = dict(await cat.db.run(lambda c: c.execute("SELECT k, v FROM entry_search_bulk_config").fetchall()))
        assert (config["automerge"], config["crisismerge"], config["hashsize"]) == (0, 1999, 16 * 2**20)
        await cat.import_plan(planned(session_file(tmp_path / "big.jsonl", "big", 25, "walrus")))
        assert await rows_in(cat) == (0, 25) and len(await cat.search("walrus", limit=100)) == 25
    finally:
        await cat.close()
