"""What only the SQLite backend promises: the file, migrations, atomic appends, search syntax,
agreement of its materialized state with the in-memory backend, and two writer processes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from treechat.storage.base import DamagedStorageError, ImportReport, StorageError
from treechat.storage.imports import prepare_records
from treechat.storage.jsonl_format import views_of
from treechat.storage.model import AssistantMessage, InvalidEntryError, MessageEntry, ThinkingContent, ToolCall
from treechat.storage.sqlite import SqliteCatalog
from treechat.storage.sqlite import db as sqlite_db
from treechat.storage.sqlite.db import SCHEMA_VERSION
from treechat.storage.sqlite.search import BROAD_MATCHES

from .helpers import append_all, assistant, ids, info, label, tool_result, user

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def db(tmp_path):
    cat = await SqliteCatalog.open(tmp_path / "treechat.db")
    yield cat
    await cat.close()


# Databases older than v5 have this v1 index (tests turn a current file back into an old one).
V1_SESSION_INDEX = "CREATE INDEX session_entries_by_session ON session_entries(session_id)"


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


# ---------------------------------------------------------------- the file and its schema


async def test_new_database_is_private_wal_and_current(tmp_path):
    path = tmp_path / "sub" / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create()
    await s.append_entry(user("u1", None))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for extra in ("-wal", "-shm"):
        if Path(str(path) + extra).exists():  # noqa: ASYNC240  a stat of a local temp path
            assert stat.S_IMODE(os.stat(str(path) + extra).st_mode) & 0o077 == 0
    await cat.close()
    c = raw(path)
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "session_entries", "branch_entries", "entry_materialized", "entry_search",
            "entry_search_bulk"} <= tables


async def test_migrates_from_previous_version_and_backfills_search(tmp_path):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="old")
    await append_all(s, user("u1", None, "written before search existed"), assistant("a1", "u1"))
    await cat.close()
    c = raw(path)  # turn the file back into a version-1 database (v2 and v3 only added indexes)
    c.execute("DROP TABLE entry_search")
    c.execute("DROP INDEX session_entries_skeleton")
    c.execute(V1_SESSION_INDEX)  # dropped by v5
    undo_v6(c)  # the v6 column, added again by the migration
    c.execute("PRAGMA user_version = 1")
    c.close()
    cat = await SqliteCatalog.open(path)
    try:
        hits = await cat.search("before search")
        assert [(h.session_id, h.entry_id) for h in hits] == [("old", "u1")]
        assert ids(await (await cat.open("old")).get_entries()) == ["u1", "a1"]
    finally:
        await cat.close()
    assert raw(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_migrates_from_version_2_adds_the_skeleton_index(tmp_path):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="s")
    await append_all(s, user("u1", None, "still searchable"), assistant("a1", "u1"))
    await cat.close()
    c = raw(path)
    c.execute("DROP INDEX session_entries_skeleton")
    c.execute(V1_SESSION_INDEX)
    c.execute("INSERT INTO entry_search(entry_search, rank) VALUES ('automerge', 4)")  # as v2 had it
    undo_v6(c)  # the v6 column, added again by the migration
    c.execute("PRAGMA user_version = 2")
    c.close()
    cat = await SqliteCatalog.open(path)
    try:
        assert [r.id for r in await (await cat.open("s")).get_tree_rows()] == ["u1", "a1"]
        assert [h.entry_id for h in await cat.search("searchable")] == ["u1"]
    finally:
        await cat.close()
    names = {r[0] for r in raw(path).execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "session_entries_skeleton" in names


def undo_v6(c: sqlite3.Connection) -> None:
    """The database as v5 left it: no status column, the v3 skeleton index (if it is there),
    and no v7 import_pid or v8 bulk search index either."""
    c.execute("DROP TABLE IF EXISTS entry_search_bulk")
    c.execute("ALTER TABLE sessions DROP COLUMN import_pid")
    had = c.execute("SELECT 1 FROM sqlite_master WHERE name = 'session_entries_skeleton'").fetchone()
    c.execute("DROP INDEX IF EXISTS session_entries_skeleton")
    c.execute("ALTER TABLE session_entries DROP COLUMN status")
    if had:
        c.execute("CREATE INDEX session_entries_skeleton ON session_entries"
                  "(session_id, entry_seq, id, parent_id, type, role, timestamp, preview, target_id)")


async def test_migrates_from_version_5_marks_failed_and_stopped_replies(tmp_path):
    from treechat.storage.model import AssistantMessage, MessageEntry, TextContent

    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="s")
    failed = MessageEntry(id="f1", parent_id="u1", message=AssistantMessage(
        content=[TextContent(text="")], provider="p", model="m", stop_reason="error", error_message="boom"))
    await append_all(s, user("u1", None, "a question"), failed)
    await cat.close()
    c = raw(path)
    undo_v6(c)
    c.execute("PRAGMA user_version = 5")
    c.close()
    cat = await SqliteCatalog.open(path)
    try:
        rows = {r.id: r.status for r in await (await cat.open("s")).get_tree_rows()}
        assert rows == {"u1": None, "f1": "error"}
    finally:
        await cat.close()


def fts_config(path: Path) -> dict[str, object]:
    return dict(raw(path).execute("SELECT k, v FROM entry_search_config"))


async def test_migrates_from_version_3_to_stepwise_search_merging(tmp_path):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="s")
    await append_all(s, user("u1", None, "written under v3"), assistant("a1", "u1"))
    await cat.close()
    c = raw(path)  # a v3 database: FTS5's own automerge, no explicit merge settings
    c.execute("DELETE FROM entry_search_config WHERE k IN ('automerge', 'usermerge', 'crisismerge')")
    c.execute(V1_SESSION_INDEX)
    undo_v6(c)  # the v6 column, added again by the migration
    c.execute("PRAGMA user_version = 3")
    c.close()
    assert "automerge" not in fts_config(path)
    cat = await SqliteCatalog.open(path)
    try:
        s = await cat.open("s")
        parent = "a1"
        for i in range(12):  # crosses several merge steps
            await s.append_entry(user(f"n{i}", parent, f"appended under v4 number {i}"))
            parent = f"n{i}"
        assert [h.entry_id for h in await cat.search("under v3")] == ["u1"]
        assert {h.entry_id for h in await cat.search('"under v4"')} == {f"n{i}" for i in range(12)}
    finally:
        await cat.close()
    config = fts_config(path)
    assert (config["automerge"], config["usermerge"]) == (0, 4)
    assert raw(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert raw(path).execute("INSERT INTO entry_search(entry_search) VALUES ('integrity-check')")


async def test_migrates_from_version_4_drops_the_redundant_session_index(tmp_path):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="s")
    await append_all(s, user("u1", None, "first"), assistant("a1", "u1"), user("u2", "a1", "second"))
    await cat.close()
    c = raw(path)  # a v4 database still has the v1 index
    c.execute(V1_SESSION_INDEX)
    undo_v6(c)  # the v6 column, added again by the migration
    c.execute("PRAGMA user_version = 4")
    c.close()
    cat = await SqliteCatalog.open(path)
    try:
        s = await cat.open("s")
        await s.append_entry(assistant("a2", "u2"))
        assert ids(await s.get_entries()) == ["u1", "a1", "u2", "a2"]
        assert [r.id for r in await s.get_tree_rows()] == ["u1", "a1", "u2", "a2"]
        await cat.delete("s")
        assert await cat.list() == []
    finally:
        await cat.close()
    names = {r[0] for r in raw(path).execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "session_entries_by_session" not in names and "session_entries_skeleton" in names
    assert raw(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_the_wal_stays_small_through_a_long_unbroken_stream_of_appends(tmp_path, monkeypatch):
    """With no idle moment the WAL never restarts by itself; db.write restarts it once the worker's
    checkpoint finds it past WAL_RESTART_FRAMES (here 1 MiB instead of 32: every append writes
    ~100 KiB of pages, so 400 appends would leave a 40 MB file)."""
    monkeypatch.setattr(sqlite_db, "WAL_RESTART_FRAMES", 256)
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    s = await cat.create(session_id="s")
    largest, parent = 0, None
    for i in range(400):
        await s.append_entry(user(f"u{i}", parent, f"entry {i} " + f"word{i} " * 200))
        parent = f"u{i}"
        largest = max(largest, os.path.getsize(f"{path}-wal"))  # noqa: ASYNC240  a stat of a local temp path
    await cat.close()
    # bounded, not exact: the restart waits for the worker's checkpoint, which a loaded machine
    # delays by some appends (8.1 MB seen at load 5.6); without the restart it is 40 MB
    assert largest < 16 * 2**20
    cat = await SqliteCatalog.open(path)
    try:
        assert len(ids(await (await cat.open("s")).get_path_to_root("u399"))) == 400
    finally:
        await cat.close()


async def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "treechat.db"
    await (await SqliteCatalog.open(path)).close()
    raw(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="newer"):
        await SqliteCatalog.open(path)


async def test_failed_append_leaves_nothing_behind(db, tmp_path):
    s = await db.create()
    await append_all(s, user("u1", None, "kept"), assistant("a1", "u1"))
    before = await s.get_session_stats()
    c = raw(tmp_path / "treechat.db")  # make the last step of the transaction fail
    c.execute("CREATE TRIGGER boom BEFORE UPDATE ON session_materialized BEGIN SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(StorageError, match="boom"):  # SQLite's error, as one typed line
        await s.append_entry(user("u2", "a1", "lost needle"))
    c.execute("DROP TRIGGER boom")
    assert await s.get_entry("u2") is None and await s.get_leaf_id() == "a1"
    assert await s.get_session_stats() == before
    assert await db.search("lost needle") == []
    await s.append_entry(user("u2", "a1", "second try"))  # nothing half-written blocks the id
    assert ids(await s.get_path_to_root("u2")) == ["u1", "a1", "u2"]


async def test_a_damaged_entry_deep_in_a_long_path_is_named_by_its_place_in_it(db, tmp_path):
    # a path is validated a few dozen KB at a time: the error still counts from the path's start
    s = await db.create()
    await append_all(s, *(user(f"u{i}", f"u{i - 1}" if i else None, "w" * 2000) for i in range(120)))
    raw(tmp_path / "treechat.db").execute(
        "UPDATE session_entries SET payload = json_set(payload, '$.message.content', 5) WHERE id = 'u90'")
    with pytest.raises(InvalidEntryError, match=r"^invalid entry: field '90\.message\.content"):
        await s.get_path_to_root("u119")
    assert ids(await s.get_path_to_root("u89"))[-1] == "u89"  # the entries before it still read


# ---------------------------------------------------------------- search


async def branchy(db):
    s = await db.create(session_id="s-one")
    await append_all(
        s,
        user("u1", None, "How do I parse JSON in Rust?"),
        assistant("a1", "u1", "Use serde_json::from_str for that."),
        user("u2", "a1", "abandoned idea about quantum teapots"),
    )
    await s.set_leaf_id("a1")  # u2 is now on an abandoned branch
    thinking = AssistantMessage(
        content=[ThinkingContent(thinking="consider the borrow checker"), ToolCall(id="t1", name="read_file", arguments={"path": "src/main.rs"})],
        provider="p",
        model="m",
    )
    await append_all(s, MessageEntry(id="a2", parent_id="a1", message=thinking), label("l1", "a2", "a1", "serde tip"))
    other = await db.create(session_id="s-two")
    await append_all(other, user("x1", None, "Rust lifetimes, again"), info("n1", "x1", "Lifetime puzzles"))
    return s


async def test_search_finds_abandoned_branches_thinking_tools_labels_and_names(db):
    await branchy(db)
    assert [h.entry_id for h in await db.search('"quantum teapots"')] == ["u2"]
    assert [h.entry_id for h in await db.search("borrow checker")] == ["a2"]
    assert [h.entry_id for h in await db.search("read_file main.rs")] == ["a2"]
    assert [h.entry_id for h in await db.search("serde tip")] == ["l1"]
    assert [(h.session_id, h.entry_id) for h in await db.search("puzzles")] == [("s-two", "n1")]


async def test_search_words_phrases_and_filters(db):
    await branchy(db)
    assert {h.entry_id for h in await db.search("rust")} == {"u1", "x1"}
    assert [h.entry_id for h in await db.search('"parse JSON"')] == ["u1"]
    assert await db.search('"JSON parse"') == []  # a phrase keeps its order
    assert [h.entry_id for h in await db.search("rust role:user session:s-o")] == ["u1"]
    assert [h.entry_id for h in await db.search("main.rs role:assistant")] == ["a2"]
    assert await db.search("main.rs role:user") == []
    assert [h.entry_id for h in await db.search("serde role:label")] == ["l1"]  # entry types work too
    hit = (await db.search("serde_json"))[0]
    assert "[[serde_json]]" in hit.snippet and hit.role == "assistant" and hit.session_name is None


async def test_short_queries_scan_and_syntax_is_never_an_error(db):
    await branchy(db)
    hits = await db.search("rs")
    assert [h.entry_id for h in hits] == ["a2", "u1"]  # newest first ("main.rs", "paRSe")
    assert "[[rs]]" in hits[0].snippet and "[[rs]]" in hits[1].snippet
    assert [h.entry_id for h in await db.search("rs borrow")] == ["a2"]  # short and long terms mix
    for nasty in ['"', 'a"b', "NEAR(", "*", "rust AND", "(x OR", "col:val", "'; DROP TABLE x", "^", "a-b", "\\"]:
        await db.search(nasty)  # no exception
    assert await db.search("   ") == []


async def test_bm25_ranks_denser_matches_first(db):
    s = await db.create()
    await append_all(
        s,
        user("u1", None, "kettle " + "filler words about nothing in particular " * 20),
        user("u2", "u1", "kettle kettle kettle"),
    )
    hits = await db.search("kettle")
    assert [h.entry_id for h in hits] == ["u2", "u1"] and hits[0].rank <= hits[1].rank


async def test_ranks_are_fts5_bm25(db, tmp_path):
    s = await db.create()
    texts = ["kettle", "a kettle on the stove, kettle again", "kettles " * 30, "no match here", "Kettle corn",
             "stove kettle stove", "the stove"]
    await append_all(s, *[user(f"u{i}", f"u{i-1}" if i else None, t) for i, t in enumerate(texts)])
    c = raw(tmp_path / "treechat.db")
    for query, match in (("kettle", '"kettle"'), ("kettle stove", '"kettle" "stove"'), ('"the stove"', '"the stove"')):
        hits = await db.search(query)
        sql = c.execute(
            "SELECT e.id, bm25(entry_search) FROM entry_search JOIN session_entries e ON e.entry_seq = entry_search.rowid"
            " WHERE entry_search MATCH ? ORDER BY rank",
            (match,),
        ).fetchall()
        assert [(h.entry_id, round(h.rank, 9)) for h in hits] == [(i, round(r, 9)) for i, r in sql], query


async def test_delete_removes_search_hits(db):
    await branchy(db)
    await db.delete("s-one")
    assert await db.search("serde") == []
    assert [h.session_id for h in await db.search("lifetimes")] == ["s-two"]


async def test_broad_queries_list_the_newest_matches_and_narrow_ones_rank_by_bm25(db):
    # More matches than BROAD_MATCHES: the newest ones, newest first (search.py explains why).
    n = BROAD_MATCHES + 20
    entries, parent = [], None
    for i in range(n):
        make = assistant if i % 500 == 7 else user
        entries.append(make(f"e{i:05d}", parent, f"kettle number {i} " + ("kettle " * (i % 3))))
        parent = entries[-1].id
    await db.import_session({"id": "broad"}, entries, parent)
    hits = await db.search("kettle", limit=30)
    assert [h.entry_id for h in hits] == [f"e{i:05d}" for i in range(n - 1, n - 31, -1)]
    assert all("[[kettle]]" in h.snippet and h.rank == 0.0 for h in hits)
    assert [h.entry_id for h in await db.search('"number 12" kettle', limit=3)][0] == "e00012"
    few = await db.search("kettle role:assistant")  # narrowed by a filter: bm25 again
    assert sorted(h.entry_id for h in few) == ["e00007", "e00507", "e01007"]
    assert [h.rank for h in few] == sorted(h.rank for h in few) and few[0].rank < 0


async def test_search_indexes_the_first_32k_characters_of_an_entry(db):
    s = await db.create()
    huge = "needle-at-start " + "lorem ipsum dolor " * 2500 + " needle-at-end"  # ~45k characters
    await append_all(s, user("u1", None, "run it"), tool_result("t1", "u1", huge))
    assert [h.entry_id for h in await db.search("needle-at-start")] == ["t1"]
    assert await db.search("needle-at-end") == []  # beyond the indexed part (rows.SEARCH_TEXT_LIMIT)
    assert (await s.get_entry("t1")).message.content[0].text == huge  # the entry itself is whole


async def test_index_stays_consistent_through_many_appends_imports_and_forks(db, tmp_path):
    s = await db.create(session_id="many")
    parent = None
    for i in range(150):  # crosses dozens of merge steps
        e = user(f"m{i}", parent, f"message {i} about topic{i % 7} and item-{i}")
        await s.append_entry(e)
        parent = e.id
    await db.import_session({"id": "imported"}, [user(f"i{i}", f"i{i-1}" if i else None, f"imported item-{i}") for i in range(300)], "i299")
    fork = await db.fork("many", "m20")
    for i in range(150, 200):
        await s.append_entry(user(f"m{i}", parent, f"message {i} about topic{i % 7} and item-{i}"))
        parent = f"m{i}"
    assert {h.entry_id for h in await db.search("item-3", limit=100)} >= {"m3", "i3"}
    assert {(h.session_id, h.entry_id) for h in await db.search('"message 20 about"')} == {
        ("many", "m20"), (fork.session_id, "m20")}
    assert len(await db.search("topic3", session_id="many", limit=500)) == 29  # i % 7 == 3 for i < 200
    c = raw(tmp_path / "treechat.db")
    c.execute("INSERT INTO entry_search(entry_search) VALUES ('integrity-check')")  # raises if not
    assert dict(c.execute("SELECT k, v FROM entry_search_config"))["automerge"] == 0  # left off after bulk loads


@pytest.mark.parametrize("how", ["json chunks", "without SQLite's JSON functions"])
async def test_a_bulk_load_indexes_every_entry_in_chunks(db, tmp_path, monkeypatch, how):
    from treechat.storage.sqlite import bulk

    monkeypatch.setattr(bulk, "_SEARCH_CHUNK", 7)  # 300 entries: many chunks, a short last one
    if how != "json chunks":  # as an SQLite built without JSON1 answers
        monkeypatch.setattr(bulk, "_INSERT_SEARCH_JSON", "INSERT INTO entry_search SELECT * FROM json_each_missing(?, ?)")
    entries = [user(f"i{i}", f"i{i-1}" if i else None, f"imported item-{i}" if i % 10 else "") for i in range(300)]
    reported: list[int] = []
    s, _ = await db.import_records({"id": "chunked"}, prepare_records(views_of(entries), "i299", ImportReport()),
                                   ImportReport(), on_progress=reported.append)
    assert sum(reported) == 300 and min(reported) >= 0
    hits = await db.search("item-", limit=500)
    assert sorted(h.entry_id for h in hits) == sorted(f"i{i}" for i in range(300) if i % 10)
    assert [h.entry_id for h in await db.search("item-299")] == ["i299"]
    c = raw(tmp_path / "treechat.db")
    c.execute("INSERT INTO entry_search(entry_search) VALUES ('integrity-check')")  # raises if not
    assert c.execute("SELECT count(*) FROM entry_search").fetchone()[0] == 270  # no rows for empty texts
    assert len(await s.get_tree_rows()) == 300


async def test_reindex_rebuilds_exactly_the_index_appends_and_imports_wrote(db, tmp_path):
    s = await db.create(session_id="live")
    parent = None
    for i in range(60):
        e = user(f"m{i}", parent, f"message {i} about topic{i % 7}")
        await s.append_entry(e)
        parent = e.id
    await s.append_entry(label("l1", parent, "m3", "keep-this"))
    await db.import_session({"id": "imported"}, [user(f"i{i}", f"i{i-1}" if i else None, f"imported item-{i}") for i in range(90)], "i89")
    c = raw(tmp_path / "treechat.db")
    before = c.execute("SELECT rowid, text FROM entry_search ORDER BY rowid").fetchall()
    c.execute("DELETE FROM entry_search_data WHERE id > 10")  # the index's pages gone: searches fail or miss
    with pytest.raises(DamagedStorageError, match=r"search index .* sessions in it are intact: run `treechat reindex`"):
        await db.search("topic3")
    reported: list[int] = []
    read, indexed = await db.rebuild_search_index(reported.append)
    assert (read, sum(reported)) == (await db.count_entries(), read) and indexed == len(before)
    assert c.execute("SELECT rowid, text FROM entry_search ORDER BY rowid").fetchall() == before
    c.execute("INSERT INTO entry_search(entry_search) VALUES ('integrity-check')")  # raises if not
    assert dict(c.execute("SELECT k, v FROM entry_search_config")) == {"automerge": 0, "usermerge": 4, "crisismerge": 16,
                                                                       "version": 4}
    assert [h.entry_id for h in await db.search("keep-this")] == ["l1"]
    assert len(await db.search("topic3", session_id="live", limit=500)) == 9


# ---------------------------------------------------------------- two writer processes


WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from treechat.storage.sqlite import SqliteCatalog
    from treechat.storage.model import MessageEntry, UserMessage

    async def main(db, tag, go):
        cat = await SqliteCatalog.open(db)
        s = await cat.open("shared")
        while not Path(go).exists():
            time.sleep(0.001)
        parent = None
        for i in range(150):
            e = MessageEntry(id=f"{tag}{i}", parent_id=parent, message=UserMessage(content=f"{tag} {i}"))
            await s.append_entry(e)
            parent = e.id
        await cat.close()

    asyncio.run(main(sys.argv[2], sys.argv[3], sys.argv[4]))
    """
)


async def test_two_processes_append_at_the_same_time(tmp_path):
    path = tmp_path / "treechat.db"
    cat = await SqliteCatalog.open(path)
    await cat.create(session_id="shared")
    go = tmp_path / "go"

    def both() -> list[tuple[int, bytes]]:  # (on a thread: the loop is not blocked while they run)
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(ROOT), str(path), tag, str(go)],
                                  stderr=subprocess.PIPE) for tag in ("p", "q")]
        go.touch()
        errors = [p.communicate(timeout=60)[1] for p in procs]
        return [(p.returncode, err) for p, err in zip(procs, errors)]

    for code, err in await asyncio.to_thread(both):
        assert code == 0, err.decode()
    s = await cat.open("shared")
    assert (await s.get_session_stats()).entry_count == 300
    assert ids(await s.get_path_to_root("p149")) == [f"p{i}" for i in range(150)]
    assert ids(await s.get_path_to_root("q149")) == [f"q{i}" for i in range(150)]
    assert (await s.get_path_state("q149")).message_count == 150
    await cat.close()
