"""The tree as columns (`get_tree_columns`) and entries read by id (`get_entries_by_ids`), on
every backend: the columns say exactly what `get_tree_rows` says, whatever the session holds."""

from __future__ import annotations

from tests.narrow import of
from treechat.storage.base import TreeRow
from treechat.storage.model import AssistantMessage, MessageEntry, StopReason, TextContent, UnknownEntry, Usage
from treechat.storage.tree.columns import DEAD
from treechat.storage.tree.index import TreeIndex

from .helpers import T0, append_all, assistant, iso, label, model_change, tool_result, user


def rows_of(index: TreeIndex) -> list:
    return list(index.by_id.values())


async def same_as_rows(s) -> TreeIndex:
    index = TreeIndex(await s.get_tree_columns())
    assert rows_of(index) == await s.get_tree_rows()
    return index


def failed(id: str, parent: str, reason: StopReason) -> MessageEntry:
    msg = AssistantMessage(content=[TextContent(text="partial")], provider="p", model="m", usage=Usage(),
                           stop_reason=reason, error_message="boom" if reason == "error" else None, timestamp=T0)
    return MessageEntry(id=id, parent_id=parent, timestamp=iso(T0), message=msg)


async def test_columns_say_what_rows_say_forks_labels_settings_statuses_and_markers(catalog):
    s = await catalog.create(cwd="/w")
    await append_all(s, user("u1", None, "first question"), assistant("a1", "u1"), tool_result("t1", "a1"),
                     model_change("m1", "t1"), user("u2", "m1"), failed("e1", "u2", "error"),
                     failed("x1", "u2", "aborted"), assistant("a2", "u2", ms=T0 + 5))
    await s.set_leaf_id("u1")  # a leaf marker: no row, and not anyone's visible parent
    await append_all(s, user("u3", "u1", "another way"), label("l1", "u3", "a1", "good"))
    markers = [e.id for e in await s.get_entries() if e.type == "leaf"]
    await s.append_entry(user("under", markers[0], "under the marker"))  # hangs under the marker's target
    index = await same_as_rows(s)
    assert index.slot(markers[0]) is None and markers[0] not in index
    assert of(TreeRow, index.get("under")).parent_id == "u1" and index.siblings("u3") == ["a1", "u3", "under"]
    row = lambda eid: of(TreeRow, index.get(eid))  # noqa: E731
    assert row("a1").label == "good" and row("e1").status == "error" and row("x1").status == "aborted"
    assert index.branch_count() == 5 and len(index) == len(await s.get_tree_rows())
    assert [index.id_at(k) for k in index.kids(of(int, index.slot("u2")))] == ["e1", "x1", "a2"]


async def test_columns_of_an_imported_session_with_orphans_and_unknown_types(catalog):
    entries = [user("u1", None), assistant("a1", "u1"),
               UnknownEntry(type="future_thing", id="f1", parent_id="a1", timestamp=iso(T0)),
               user("o1", "never-stored"), assistant("o2", "o1")]
    s, _ = await catalog.import_session({"id": "imp", "cwd": "/w"}, entries, "o2")
    index = await same_as_rows(s)
    assert of(TreeRow, index.get("o1")).parent_id == "never-stored"
    assert index.type_at(of(int, index.slot("f1"))) == "future_thing"
    assert index.path_ids("o2") == ["o1", "o2"]


async def test_columns_of_sessions_written_turn_about(catalog):
    """Two sessions appended to in turn (their entries interleave in a shared store)."""
    one, two = await catalog.create(cwd="/a"), await catalog.create(cwd="/b")
    parents: dict[str, str | None] = {"one": None, "two": None}
    for i in range(30):
        for name, s in (("one", one), ("two", two)):
            entry = user(f"{name}{i}", parents[name], f"{name} says {i}") if i % 2 == 0 else \
                assistant(f"{name}{i}", parents[name])
            await s.append_entry(entry)
            parents[name] = entry.id if i % 7 else parents[name]  # now and then a fork
    for s in (one, two):
        index = await same_as_rows(s)
        assert all(p != DEAD for p in index.parents)


async def test_entries_by_ids_in_the_order_asked(catalog):
    s = await catalog.create(cwd="/w")
    await append_all(s, user("u1", None), assistant("a1", "u1"), user("u2", "a1"), assistant("a2", "u2"))
    got = await s.get_entries_by_ids(["a2", "nope", "u1", "a1"])
    assert [e.id for e in got] == ["a2", "u1", "a1"]
    assert got[1] == await s.get_entry("u1")
    assert await s.get_entries_by_ids([]) == []


async def test_path_rows_are_the_tree_rows_of_the_path_from_its_last_compaction(catalog):
    from .helpers import compaction

    s = await catalog.create(cwd="/w")
    await append_all(s, user("u1", None), assistant("a1", "u1"), user("u2", "a1"), assistant("a2", "u2"),
                     label("l1", "a2", "u2", "here"))
    await s.set_leaf_id("a1")
    markers = [e.id for e in await s.get_entries() if e.type == "leaf"]
    await append_all(s, user("u3", markers[0]), assistant("a3", "u3"), compaction("c1", "a3", first_kept="u3"),
                     user("u4", "c1"))
    rows = {r.id: r for r in await s.get_tree_rows()}
    assert await s.get_path_rows("a2") == [rows[i] for i in ("u1", "a1", "u2", "a2")]
    assert (await s.get_path_rows("a2"))[2].label == "here"
    path = await s.get_path_rows("u4")  # from the compaction's kept entry on
    assert [r.id for r in path] == [e.id for e in await s.get_path_to_root_or_compaction("u4") if e.type != "leaf"]
    assert path == [rows[r.id] for r in path] and path[0].id == "u3" and path[0].parent_id == "a1"
