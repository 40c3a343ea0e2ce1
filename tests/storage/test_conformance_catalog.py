"""The catalog half of the storage contract, run against every backend (see test_conformance.py)."""

from __future__ import annotations

import json

import pytest

from treechat.storage import open_catalog
from treechat.storage.base import (
    AmbiguousSessionError,
    EntryNotFoundError,
    SessionNotFoundError,
    StorageError,
)
from treechat.storage.imports.records import UncheckedLineError, read_records

from .helpers import T0, append_all, assistant, compaction, ids, info, label, thinking, user

DAY = 86_400_000


async def two_turns(catalog, *, ms: int = T0, session_id: str | None = None, text: str = "hello"):
    s = await catalog.create(session_id=session_id, cwd="/w")
    await append_all(s, user("u1", None, text, ms=ms), assistant("a1", "u1", "sure", ms=ms + 1000))
    return s


# ---------------------------------------------------------------- create / open


async def test_open_by_full_id_and_unique_prefix(catalog):
    s = await catalog.create(session_id="0a1b2c3d-session")
    assert (await catalog.open("0a1b2c3d-session")).session_id == s.session_id
    assert (await catalog.open("0a1b")).session_id == s.session_id


async def test_open_ambiguous_prefix(catalog):
    await catalog.create(session_id="abc-one")
    await catalog.create(session_id="abc-two")
    with pytest.raises(AmbiguousSessionError) as err:
        await catalog.open("abc")
    assert sorted(err.value.candidates) == ["abc-one", "abc-two"]


async def test_open_unknown(catalog):
    await catalog.create(session_id="present")
    with pytest.raises(SessionNotFoundError, match="absent"):
        await catalog.open("absent")


async def test_create_with_taken_id_fails(catalog):
    await catalog.create(session_id="same")
    with pytest.raises(StorageError):
        await catalog.create(session_id="same")


async def test_generated_session_ids_are_distinct_uuids(catalog):
    a, b = await catalog.create(), await catalog.create()
    assert a.session_id != b.session_id and len(a.session_id) == 36


async def test_open_sees_appends(catalog):
    s = await two_turns(catalog)
    again = await catalog.open(s.session_id)
    assert ids(await again.get_entries()) == ["u1", "a1"]


# ---------------------------------------------------------------- list / latest / rename / delete


async def test_list_newest_modified_first(catalog):
    # Modified time is the newest message, not when the session was created.
    old = await two_turns(catalog, ms=T0, session_id="old")
    new = await two_turns(catalog, ms=T0 + 5 * DAY, session_id="new", text="newer topic")
    mid = await two_turns(catalog, ms=T0 + 2 * DAY, session_id="mid")
    rows = await catalog.list()
    assert [r.id for r in rows] == [new.session_id, mid.session_id, old.session_id]
    top = rows[0]
    assert (top.message_count, top.entry_count, top.first_message, top.cwd) == (2, 2, "newer topic", "/w")
    assert (await catalog.latest()).session_id == "new"


async def test_latest_of_empty_store(catalog):
    assert await catalog.latest() is None
    assert await catalog.list() == []


async def test_rename_appends_session_info(catalog):
    s = await two_turns(catalog)
    await catalog.rename(s.session_id[:4], "  Named  ")
    info = await s.find_entries("session_info")
    assert len(info) == 1 and info[0].parent_id == "a1"
    assert await s.get_session_name() == "Named"
    assert [r.name for r in await catalog.list()] == ["Named"]
    await catalog.rename(s.session_id, "")
    assert await s.get_session_name() is None


async def test_delete(catalog):
    s = await two_turns(catalog, session_id="doomed")
    await two_turns(catalog, session_id="kept")
    await catalog.delete("doomed")
    assert [r.id for r in await catalog.list()] == ["kept"]
    with pytest.raises(SessionNotFoundError):
        await catalog.open(s.session_id)
    with pytest.raises(SessionNotFoundError):
        await catalog.delete("doomed")


async def test_list_survives_reopen(catalog, tmp_path):
    if catalog.kind == "memory":
        pytest.skip("the in-memory backend keeps nothing across catalogs")
    s = await two_turns(catalog)
    await catalog.rename(s.session_id, "Kept")
    await catalog.close()
    again = await open_catalog(catalog.kind, tmp_path)
    try:
        rows = await again.list()
        assert [(r.id, r.name, r.message_count) for r in rows] == [(s.session_id, "Kept", 2)]
    finally:
        await again.close()


# ---------------------------------------------------------------- fork


async def test_fork_copies_path_and_labels_on_it(catalog):
    s = await two_turns(catalog)
    await append_all(
        s,
        user("u2", "a1"),
        assistant("a2", "u2"),
        label("l1", "a2", "u1", "start"),
        label("l2", "l1", "a2", "late"),
        user("x1", "u1"),  # another branch, not on the forked path
    )
    fork = await catalog.fork(s.session_id, "u2")
    entries = await fork.get_entries()
    assert ids(entries[:3]) == ["u1", "a1", "u2"]
    labels = [e for e in entries[3:] if e.type == "label"]
    assert [(e.target_id, e.label, e.parent_id) for e in labels] == [("u1", "start", "u2")]
    assert await fork.get_labels() == {"u1": "start"}
    assert await fork.get_leaf_id() == labels[-1].id
    meta = await fork.get_metadata()
    assert (meta.parent_session_id, meta.parent_entry_id) == (s.session_id, "u2")
    assert fork.session_id != s.session_id
    assert ids(await s.get_entries())[:2] == ["u1", "a1"]  # the source is untouched
    rows = {r.id: r for r in await catalog.list()}
    assert rows[fork.session_id].parent_session_id == s.session_id


async def test_fork_without_labels_ends_at_entry(catalog):
    s = await two_turns(catalog)
    fork = await catalog.fork(s.session_id, "a1")
    assert ids(await fork.get_entries()) == ["u1", "a1"]
    assert await fork.get_leaf_id() == "a1"


def _walk(entries, leaf):
    """The path root → leaf by parent links alone; fails on a link to an entry the session lacks."""
    by_id = {e.id: e for e in entries}
    path, at = [], leaf
    while at is not None:
        assert at in by_id, f"{at} is linked to but not in the session"
        path.append(by_id[at])
        at = by_id[at].parent_id
    return path[::-1]


async def test_every_fork_keeps_a_path_to_its_root_after_labels_names_and_settings(catalog):
    """/label, /name and a setting after it, a compaction keeping from a label: forking at any
    entry (what `/fork here` does at the leaf) leaves a session whose path reaches its root, with
    the same messages, the name and the labels of the entries it holds."""
    s = await two_turns(catalog)
    await append_all(
        s,
        label("l1", "a1", "a1", "good"),
        info("n1", "l1", "Named"),
        thinking("t1", "n1", "high"),
        user("u2", "t1", "second"),
        assistant("a2", "u2", "second reply"),
        label("l2", "a2", "u2", "q"),
        compaction("c1", "l2", first_kept="l1"),
        user("u3", "c1", "third"),
        label("l3", "u3", "u3", "last"),
    )
    source = await s.get_entries()
    for entry in source:
        fork = await catalog.fork(s.session_id, entry.id)
        entries = await fork.get_entries()
        leaf = await fork.get_leaf_id()
        path = _walk(entries, leaf)
        want = [e.id for e in _walk(source, entry.id) if e.type != "label"]
        assert [e.id for e in path if e.type != "label"] == want, entry.id
        shown = [e.id for e in await fork.get_path_to_root_or_compaction(leaf) if e.type != "label"]
        # the compaction kept from the label l1: its copy keeps from the entry after it
        assert shown == (want[want.index("n1"):] if "c1" in want else want), entry.id
        assert await fork.get_session_name() == ("Named" if "n1" in want else None), entry.id
        labels = {"a1": "good", "u2": "q", "u3": "last"}  # the source's labels now, as Pi copies them
        assert await fork.get_labels() == {t: v for t, v in labels.items() if t in want}, entry.id


async def test_fork_unknown_entry(catalog):
    s = await two_turns(catalog)
    with pytest.raises(EntryNotFoundError, match="nope"):
        await catalog.fork(s.session_id, "nope")


# ---------------------------------------------------------------- import


async def test_import_skips_duplicates_and_keeps_orphans(catalog):
    entries = [
        user("u1", None, "one"),
        assistant("a1", "u1"),
        user("u1", "a1", "duplicate"),
        user("o1", "missing-parent", "orphan"),
        user("u2", "a1"),
    ]
    s, report = await catalog.import_session({"type": "session", "id": "imported", "cwd": "/p"}, entries, "a1")
    assert report.duplicate_ids == 1 and report.entries == 4 and report.session_id == "imported"
    assert await s.get_leaf_id() == "a1"
    assert (await s.get_entry("u1")).message.content == "one"
    assert ids(await s.get_path_to_root("o1")) == ["o1"]
    assert ids(await s.find_entries("message")) == ["u1", "a1", "o1", "u2"]
    assert (await s.get_metadata()).cwd == "/p"
    assert (await catalog.open("imported")).session_id == "imported"


async def test_import_leaf_survives_reopen(catalog, tmp_path):
    entries = [user("u1", None), assistant("a1", "u1"), user("u2", "a1")]
    s, _ = await catalog.import_session({"id": "imp", "cwd": ""}, entries, "a1")
    if catalog.kind == "memory":
        return
    await catalog.close()
    again = await open_catalog(catalog.kind, tmp_path)
    try:
        s2 = await again.open("imp")
        assert await s2.get_leaf_id() == "a1"
        assert ids(await s2.find_entries("message")) == ["u1", "a1", "u2"]
    finally:
        await again.close()


async def test_import_unknown_leaf(catalog):
    with pytest.raises(EntryNotFoundError):
        await catalog.import_session({"id": "bad"}, [user("u1", None)], "ghost")


async def test_import_breaks_cycles_and_keeps_every_entry(catalog):
    entries = [
        user("r1", None),
        user("self", "self", "i am my own parent"),
        user("c1", "c2"),
        user("c2", "c1"),
        user("d1", "c2"),  # below the loop
    ]
    s, report = await catalog.import_session({"id": "loopy"}, entries, "d1")
    assert report.repaired == 2 and report.entries == 5
    assert any("self" in p and "own parent" in p for p in report.problems)
    assert ids(await s.get_path_to_root("self")) == ["self"]
    # the cycle's first entry becomes a root; everything under it builds a path
    assert ids(await s.get_path_to_root("d1")) == ["c1", "c2", "d1"]
    assert ids(await s.get_path_to_root_or_compaction("d1")) == ["c1", "c2", "d1"]
    assert (await s.get_path_state("d1")).depth == 3
    assert ids(await s.get_path_to_root("r1")) == ["r1"]
    assert len(await s.get_tree_rows()) == 5
    assert (await s.get_entry("c1")).parent_id is None


def session_file(path, session_id: str, entries, *extra_lines: str):
    from treechat.storage.model_lite import entry_json

    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": "/w"})]
    lines += [entry_json(e) for e in entries] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


# A message without content: the quick read (views only) lets it through, pydantic does not.
INVALID_LINE = json.dumps({"type": "message", "id": "bad1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                           "message": {"role": "user"}})


async def test_records_read_unchecked_are_validated_before_anything_is_stored(catalog, tmp_path):
    good = [user("u1", None, "kept"), assistant("a1", "u1", "answer")]
    s, _ = await catalog.import_records(*read_records(session_file(tmp_path / "a.jsonl", "same", good)))
    header, records, report = read_records(session_file(tmp_path / "b.jsonl", "same", [user("x1", None, "new")],
                                                        INVALID_LINE), check_later=True)
    assert records.unchecked
    with pytest.raises(UncheckedLineError, match="content"):
        await catalog.import_records(header, records, report, replace=True)
    # nothing stored, nothing replaced: the earlier import is whole
    rows = await catalog.list()
    assert [r.id for r in rows] == ["same"] and rows[0].entry_count == 2
    again = await catalog.open("same")
    assert ids(await again.get_path_to_root(await again.get_leaf_id())) == ["u1", "a1"]
    assert [h.entry_id for h in await catalog.search("kept")] == ["u1"]
    assert await catalog.search("new") == []
    # a clean file read the quick way stores exactly what the validating read stores
    header, records, report = read_records(session_file(tmp_path / "c.jsonl", "clean", good), check_later=True)
    assert records.unchecked
    clean, _ = await catalog.import_records(header, records, report)
    assert ids(await clean.get_path_to_root("a1")) == ["u1", "a1"] and not records.unchecked


# ---------------------------------------------------------------- search


async def test_search_case_insensitive_with_snippet(catalog):
    s = await two_turns(catalog, text="Where is the Needle in this haystack?")
    other = await two_turns(catalog, text="nothing to see")
    hits = await catalog.search("needle")
    assert [(h.session_id, h.entry_id, h.type, h.role) for h in hits] == [(s.session_id, "u1", "message", "user")]
    snippet = hits[0].snippet
    inside = snippet[snippet.index("[[") + 2 : snippet.index("]]")]
    assert inside.lower() == "needle" and "haystack" in snippet
    assert await catalog.search("needle", session_id=other.session_id) == []
    assert await catalog.search("zzzzzz") == []
    assert await catalog.search("needle", further=50) == []  # it looked at every entry: nothing further back


async def test_search_limit_and_session_filter(catalog):
    a = await catalog.create(session_id="sa")
    await append_all(a, user("u1", None, "apple pie"), assistant("a1", "u1", "apple tart"), user("u2", "a1", "apple"))
    b = await catalog.create(session_id="sb")
    await b.append_entry(user("u1", None, "apple juice"))
    assert len(await catalog.search("apple")) == 4
    assert len(await catalog.search("apple", limit=2)) == 2
    only_b = await catalog.search("apple", session_id="sb")
    assert [(h.session_id, h.entry_id) for h in only_b] == [("sb", "u1")]
    assert {h.session_id: h.session_title for h in await catalog.search("apple")} == {"sa": "apple pie",
                                                                                     "sb": "apple juice"}
    await catalog.rename("sa", "Fruit")
    names = {h.session_id: h.session_name for h in await catalog.search("tart")}
    assert names == {"sa": "Fruit"}
    # what a person knows a session by: its name, else its first message (as `treechat sessions` lists it)
    assert {h.session_id: h.session_title for h in await catalog.search("apple")} == {"sa": "Fruit", "sb": "apple juice"}
    assert {h.session_id: h.session_title for h in await catalog.search("ap")} == {"sa": "Fruit", "sb": "apple juice"}


# ---------------------------------------------------------------- other writers


async def test_poll_appended_returns_other_writers_entries_without_moving_the_leaf(catalog, tmp_path):
    if catalog.kind == "memory":
        s = await two_turns(catalog)
        assert not await s.poll_appended()  # nothing else can write to it
        return
    mine = await two_turns(catalog, session_id="shared")
    assert not await mine.poll_appended()
    other_catalog = await open_catalog(catalog.kind, tmp_path)
    try:
        other = await other_catalog.open("shared")
        await append_all(other, user("o1", "a1", "from elsewhere"), label("ol", "o1", "u1", "seen"))
        await other.set_leaf_id("u1")
        await mine.append_entry(user("m1", "a1", "mine"))  # interleaved: mine is not reported back
        got = await mine.poll_appended()
        assert [e.id for e in got.entries if e.type != "leaf"] == ["o1", "ol"]
        assert [r.id for r in got.rows] == ["o1", "ol"] and got.rows[0].parent_id == "a1"
        assert got.rows[0].preview == "from elsewhere"
        assert not await mine.poll_appended()  # each entry is reported once
        assert await mine.get_labels() == {"u1": "seen"}
        assert (await mine.get_entry("o1")).message.content == "from elsewhere"
        if catalog.kind == "jsonl":
            assert await mine.get_leaf_id() == "m1"  # this process's leaf did not move
        await mine.append_entry(user("m2", "o1", "answering theirs"))
        assert ids(await mine.get_path_to_root("m2")) == ["u1", "a1", "o1", "m2"]
    finally:
        await other_catalog.close()


@pytest.mark.parametrize("check_later", [False, True])
async def test_a_line_escaping_half_a_surrogate_pair_imports_with_a_replacement_character(catalog, tmp_path,
                                                                                       check_later):
    """JSON.stringify (Pi) writes half a UTF-16 pair a model sent as "\\ud83d"; neither JSON decoder
    takes it. The message is kept, the half replaced by U+FFFD, a whole escaped pair joined."""
    half = json.dumps({"type": "message", "id": "h1", "parentId": "u1", "timestamp": "2026-01-01T00:00:01.000Z",
                       "message": {"role": "user", "content": "half \ud83d and whole \ud83d\ude00 end", "timestamp": 1}})
    assert "\\ud83d and" in half  # the escape as it stands in the file
    path = session_file(tmp_path / "half.jsonl", "half", [user("u1", None, "first")], half)
    header, records, report = read_records(path, check_later=check_later)
    s, _ = await catalog.import_records(header, records, report)
    assert report.skipped_lines == 0
    (entry,) = [e for e in await s.get_path_to_root(await s.get_leaf_id()) if e.id == "h1"]
    assert entry.message.content == "half \ufffd and whole \U0001f600 end"
    assert [h.entry_id for h in await catalog.search("whole")] == ["h1"]


@pytest.mark.parametrize("content", [5, {"a": 1}, True])
async def test_a_message_of_an_unknown_role_with_any_content_is_kept_and_breaks_nothing(catalog, tmp_path, content):
    """Pi keeps roles it does not know as they are; one such line (content a number) crashed every
    listing of the JSONL store and aborted a folder import with a traceback (user audit)."""
    odd = json.dumps({"type": "message", "id": "r1", "parentId": "u1", "timestamp": "2026-01-01T00:00:01.000Z",
                      "message": {"role": "robot", "content": content, "timestamp": 1}})
    path = session_file(tmp_path / "odd.jsonl", "odd", [user("u1", None, "first")], odd)
    s, _ = await catalog.import_records(*read_records(path))
    branch = await s.get_path_to_root(await s.get_leaf_id())
    assert [e.id for e in branch] == ["u1", "r1"] and branch[-1].message.content == content
    rows = {r.id: r for r in await s.get_tree_rows()}
    assert rows["r1"].role == "robot"
    assert (await s.get_session_stats()).entry_count == 2
    assert [r.id for r in await catalog.list()] == ["odd"]
    assert [h.entry_id for h in await catalog.search("first")] == ["u1"]


def test_hits_are_labelled_by_title_with_the_id_only_where_two_share_one():
    from treechat.storage.base import SearchHit, hit_labels

    def hit(sid: str, title: str) -> SearchHit:
        return SearchHit(sid, "e", "message", "user", "", 0.0, session_title=title)

    a, b = "01a24151-6716-7598-8f3c-75d164441e5f", "01a24151-6305-7814-a45c-79672587b005"
    hits = [hit(a, "hi"), hit(b, "hi"), hit(a, "hi"), hit("01a2414e-0000", "fix the\n  build"), hit("01b9-x", ""),
            hit("01c0", "a" * 60)]
    assert hit_labels(hits) == ["hi · 01a24151-6716", "hi · 01a24151-6305", "hi · 01a24151-6716", "fix the build",
                                "01b9-x", "a" * 39 + "…"]
