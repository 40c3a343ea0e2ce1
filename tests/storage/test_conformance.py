"""The storage contract, run against every backend (the `catalog` fixture is parametrised).

Per-session behaviour (entries, leaf, labels, paths, aggregates) is here; the catalog's
(create/open/list/fork/import/search) is in test_conformance_catalog.py.
"""

from __future__ import annotations

import pytest

from treechat.storage import open_catalog
from treechat.storage.base import (
    DuplicateEntryError,
    EntryCursor,
    EntryNotFoundError,
    PathState,
    SessionStorage,
)
from treechat.storage.model import (
    Cost,
    CustomEntry,
    LeafEntry,
    MessageEntry,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)

from .helpers import (
    append_all,
    assistant,
    compaction,
    ids,
    info,
    label,
    model_change,
    thinking,
    tool_result,
    tools,
    user,
)


@pytest.fixture
async def reopen(catalog, tmp_path):
    """Close the catalog and open the same store again (skips for the in-memory backend)."""
    opened = []

    async def _reopen(session_id: str):
        if catalog.kind == "memory":
            pytest.skip("the in-memory backend keeps nothing across catalogs")
        await catalog.close()
        again = await open_catalog(catalog.kind, tmp_path)
        opened.append(again)
        return await again.open(session_id)

    yield _reopen
    for cat in opened:
        await cat.close()


async def chain(catalog):
    """u1 → a1 → u2 → a2, returned with the storage."""
    s = await catalog.create(cwd="/work")
    await append_all(s, user("u1", None, "first question"), assistant("a1", "u1"), user("u2", "a1"), assistant("a2", "u2"))
    return s


# ---------------------------------------------------------------- appending and the leaf


async def test_storage_satisfies_protocol(catalog):
    s = await catalog.create()
    assert isinstance(s, SessionStorage)
    assert await s.get_leaf_id() is None
    assert await s.get_entries() == []


async def test_append_advances_leaf_and_reads_back(catalog):
    s = await catalog.create()
    await s.append_entry(user("u1", None, "hi there"))
    assert await s.get_leaf_id() == "u1"
    await s.append_entry(assistant("a1", "u1"))
    assert await s.get_leaf_id() == "a1"
    got = await s.get_entry("u1")
    assert got.parent_id is None and got.message.content == "hi there"
    assert await s.get_entry("nope") is None


async def test_create_entry_id_is_new(catalog):
    s = await chain(catalog)
    new_id = await s.create_entry_id()
    assert len(new_id) == 8 and await s.get_entry(new_id) is None


async def test_unknown_parent_is_rejected_and_nothing_written(catalog):
    s = await chain(catalog)
    with pytest.raises(EntryNotFoundError, match="ghost"):
        await s.append_entry(user("x1", "ghost"))
    assert await s.get_entry("x1") is None
    assert await s.get_leaf_id() == "a2"
    assert ids(await s.get_entries()) == ["u1", "a1", "u2", "a2"]


async def test_duplicate_id_is_rejected(catalog):
    s = await chain(catalog)
    with pytest.raises(DuplicateEntryError, match="u2"):
        await s.append_entry(user("u2", "a2", "again"))
    assert (await s.get_entry("u2")).message.content == "hello"
    assert await s.get_leaf_id() == "a2"


async def test_reads_return_fresh_objects(catalog):
    s = await chain(catalog)
    entry = await s.get_entry("u1")
    entry.message.content = "changed"
    (await s.get_path_to_root("a2"))[0].message.content = "changed too"
    assert (await s.get_entry("u1")).message.content == "first question"


async def test_set_leaf_id_moves_and_next_append_branches(catalog):
    s = await chain(catalog)
    await s.set_leaf_id("a1")
    assert await s.get_leaf_id() == "a1"
    markers = await s.find_entries("leaf")
    assert isinstance(markers[-1], LeafEntry) and markers[-1].target_id == "a1"
    await s.append_entry(user("u3", "a1"))
    assert ids(await s.get_children("a1")) == ["u2", "u3"]  # markers are not children
    await s.set_leaf_id(None)
    assert await s.get_leaf_id() is None


async def test_set_leaf_id_unknown_raises_and_keeps_leaf(catalog):
    s = await chain(catalog)
    with pytest.raises(EntryNotFoundError, match="nowhere"):
        await s.set_leaf_id("nowhere")
    assert await s.get_leaf_id() == "a2"


async def test_markers_are_not_counted_or_drawn(catalog):
    s = await chain(catalog)
    await s.set_leaf_id("u1")
    assert (await s.get_session_stats()).entry_count == 4
    assert [r.id for r in await s.get_tree_rows()] == ["u1", "a1", "u2", "a2"]


async def test_leaf_survives_reopen(catalog, reopen):
    s = await chain(catalog)
    await s.set_leaf_id("a1")
    s2 = await reopen(s.session_id)
    assert await s2.get_leaf_id() == "a1"
    await s2.append_entry(user("u3", "a1"))
    assert await s2.get_leaf_id() == "u3"


async def test_null_leaf_survives_reopen(catalog, reopen):
    s = await chain(catalog)
    await s.set_leaf_id(None)
    assert await (await reopen(s.session_id)).get_leaf_id() is None


async def test_everything_survives_reopen(catalog, reopen):
    s = await chain(catalog)
    await append_all(s, label("l1", "a2", "u1", "start"), info("i1", "l1", "My session"))
    before = [e.model_dump() for e in await s.get_entries()]
    state = await s.get_path_state("a2")
    s2 = await reopen(s.session_id)
    assert [e.model_dump() for e in await s2.get_entries()] == before
    assert await s2.get_label("u1") == "start"
    assert await s2.get_session_name() == "My session"
    assert await s2.get_path_state("a2") == state
    assert (await s2.get_metadata()).cwd == "/work"


# ---------------------------------------------------------------- labels and name


async def test_labels_last_wins_and_clear(catalog):
    s = await chain(catalog)
    await append_all(s, label("l1", "a2", "u1", "first"), label("l2", "l1", "u1", "second"))
    await s.append_entry(label("l3", "l2", "a1", "answer"))
    assert await s.get_label("u1") == "second"
    assert await s.get_labels() == {"u1": "second", "a1": "answer"}
    await s.append_entry(label("l4", "l3", "u1", None))
    await s.append_entry(label("l5", "l4", "a1", ""))
    assert await s.get_label("u1") is None
    assert await s.get_labels() == {}
    assert await s.get_leaf_id() == "l5"  # a label is an entry like any other (Pi quirk 2)


async def test_tree_rows_carry_labels(catalog):
    s = await chain(catalog)
    await s.append_entry(label("l1", "a2", "a1", "good"))
    rows = {r.id: r for r in await s.get_tree_rows()}
    assert rows["a1"].label == "good" and rows["u1"].label is None


async def test_session_name_is_global_last_trimmed_and_clearable(catalog):
    s = await chain(catalog)
    assert await s.get_session_name() is None
    await s.append_entry(info("i1", "a2", "  Refactor  "))
    assert await s.get_session_name() == "Refactor"
    assert (await s.get_metadata()).name == "Refactor"
    await s.set_leaf_id("u1")  # the name does not depend on the branch
    assert await s.get_session_name() == "Refactor"
    await s.append_entry(info("i2", "u1", "   "))
    assert await s.get_session_name() is None


# ---------------------------------------------------------------- lookups


async def test_find_entries_by_type(catalog):
    s = await chain(catalog)
    await append_all(s, thinking("t1", "a2"), CustomEntry(id="c1", parent_id="t1", custom_type="x", data={"k": 1}))
    assert ids(await s.find_entries("message")) == ["u1", "a1", "u2", "a2"]
    assert ids(await s.find_entries("custom")) == ["c1"]
    assert (await s.find_entries("custom"))[0].data == {"k": 1}
    assert await s.find_entries("compaction") == []


async def test_get_children_in_append_order(catalog):
    s = await chain(catalog)
    await s.append_entry(user("u3", "a1"))
    await s.append_entry(user("r2", None))
    assert ids(await s.get_children("a1")) == ["u2", "u3"]
    assert ids(await s.get_children(None)) == ["u1", "r2"]
    assert await s.get_children("a2") == []


async def test_get_entries_cursor(catalog):
    s = await chain(catalog)
    await s.append_entry(thinking("t1", "a2"))
    await s.append_entry(user("u3", "t1"))
    all_ids = ["u1", "a1", "u2", "a2", "t1", "u3"]
    assert ids(await s.get_entries()) == all_ids
    assert ids(await s.get_entries(EntryCursor(after_id="a1"))) == all_ids[2:]
    assert ids(await s.get_entries(EntryCursor(before_id="u2"))) == ["u1", "a1"]
    assert ids(await s.get_entries(EntryCursor(after_id="u1", before_id="t1"))) == ["a1", "u2", "a2"]
    assert ids(await s.get_entries(EntryCursor(limit=2))) == ["u1", "a1"]
    assert ids(await s.get_entries(EntryCursor(types=["thinking_level_change"]))) == ["t1"]
    # Newest first pages backwards: the `limit` newest before the cursor.
    assert ids(await s.get_entries(EntryCursor(newest_first=True, limit=2))) == ["u3", "t1"]
    assert ids(await s.get_entries(EntryCursor(before_id="t1", newest_first=True, limit=2))) == ["a2", "u2"]
    page = await s.get_entries(EntryCursor(types=["message"], newest_first=True, limit=3))
    assert ids(page) == ["u3", "a2", "u2"]
    with pytest.raises(EntryNotFoundError):
        await s.get_entries(EntryCursor(after_id="missing"))


# ---------------------------------------------------------------- paths


async def test_path_to_root(catalog):
    s = await chain(catalog)
    await s.append_entry(thinking("t1", "a1"))
    assert ids(await s.get_path_to_root("a2")) == ["u1", "a1", "u2", "a2"]
    assert ids(await s.get_path_to_root("t1")) == ["u1", "a1", "t1"]
    assert ids(await s.get_path_to_root("u1")) == ["u1"]
    with pytest.raises(EntryNotFoundError, match="zzz"):
        await s.get_path_to_root("zzz")


async def test_path_to_compaction_without_compaction_is_whole_path(catalog):
    s = await chain(catalog)
    assert ids(await s.get_path_to_root_or_compaction("a2")) == ["u1", "a1", "u2", "a2"]


async def test_path_to_compaction_stops_at_first_kept(catalog):
    s = await chain(catalog)
    await append_all(s, compaction("c1", "a2", first_kept="u2"), user("u3", "c1"))
    assert ids(await s.get_path_to_root_or_compaction("u3")) == ["u2", "a2", "c1", "u3"]


async def test_path_to_compaction_retained_tail_starts_at_compaction(catalog):
    s = await chain(catalog)
    await append_all(s, compaction("c1", "a2", first_kept="u2", retained_tail=True), user("u3", "c1"))
    assert ids(await s.get_path_to_root_or_compaction("u3")) == ["c1", "u3"]


async def test_path_to_compaction_only_last_compaction_decides(catalog):
    s = await chain(catalog)
    await append_all(
        s,
        compaction("c1", "a2", retained_tail=True),
        user("u3", "c1"),
        compaction("c2", "u3", first_kept="a1"),  # reaches back past c1
        user("u4", "c2"),
    )
    assert ids(await s.get_path_to_root_or_compaction("u4")) == ["a1", "u2", "a2", "c1", "u3", "c2", "u4"]
    # from inside the older range only c1 is on the path
    assert ids(await s.get_path_to_root_or_compaction("u3")) == ["c1", "u3"]


async def test_path_to_compaction_unknown_first_kept_reaches_root(catalog):
    s = await chain(catalog)
    await append_all(s, compaction("c1", "a2", first_kept="elsewhere"), user("u3", "c1"))
    assert ids(await s.get_path_to_root_or_compaction("u3")) == ["u1", "a1", "u2", "a2", "c1", "u3"]


# ---------------------------------------------------------------- aggregates


async def test_path_state_follows_the_path(catalog):
    s = await catalog.create()
    await append_all(
        s,
        user("u1", None),
        assistant("a1", "u1", provider="p1", model="m1", inp=100, out=10, cost=0.5),
        thinking("t1", "a1", "high"),
        tools("k1", "t1", ["read", "bash"]),
        model_change("m1", "k1", "p2", "m2"),
        user("u2", "m1"),
        assistant("a2", "u2", provider="p3", model="m3", inp=200, out=20, cost=1.25),
    )
    await s.append_entry(assistant("b1", "u1", provider="px", model="mx", inp=7, out=7, cost=9.0))

    assert await s.get_path_state(None) == PathState()
    st = await s.get_path_state("m1")
    assert st.model == {"provider": "p2", "modelId": "m2"}  # model_change after the assistant wins
    assert st.thinking_level == "high" and st.active_tool_names == ["read", "bash"]
    assert (st.message_count, st.input_tokens, st.output_tokens, st.context_tokens) == (2, 100, 10, 110)
    end = await s.get_path_state("a2")
    assert end.model == {"provider": "p3", "modelId": "m3"}  # an assistant message sets the model too
    assert (end.depth, end.message_count, end.input_tokens, end.output_tokens) == (7, 4, 300, 30)
    assert end.cost_total == pytest.approx(1.75) and end.context_tokens == 220
    other = await s.get_path_state("b1")  # the sibling branch shares nothing after u1
    assert other.model == {"provider": "px", "modelId": "mx"} and other.thinking_level == "off"
    assert other.active_tool_names is None and other.cost_total == pytest.approx(9.0)
    with pytest.raises(EntryNotFoundError):
        await s.get_path_state("missing")


async def test_session_stats_cover_every_branch(catalog):
    s = await catalog.create()
    await append_all(
        s,
        user("u1", None),
        assistant("a1", "u1", inp=100, out=10, cost=0.5),
        tool_result("r1", "a1"),
        thinking("t1", "r1"),
        assistant("b1", "u1", inp=5, out=1, cost=0.25),
    )
    st = await s.get_session_stats()
    assert (st.entry_count, st.message_count, st.user_messages, st.assistant_messages, st.tool_results) == (5, 4, 1, 2, 1)
    assert (st.input_tokens, st.output_tokens, st.total_tokens) == (105, 11, 116)
    assert st.cost_total == pytest.approx(0.75)


async def test_a_sub_agents_spending_counts_on_the_path_and_in_the_session(catalog, reopen):
    """A task tool's result carries what its sub-agent spent (`usage`): the path's and the
    session's tokens and cost count it, not the context (the child's is not the parent's) nor the
    model; written one by one, imported in bulk, and read again."""
    child = Usage(input=1000, output=200, total_tokens=1200, cost=Cost(total=0.5))
    spent = MessageEntry(id="r1", parent_id="a1", message=ToolResultMessage(
        tool_call_id="c1", tool_name="task", content=[TextContent(text="done")], usage=child))
    entries = [user("u1", None), assistant("a1", "u1", provider="p1", model="m1", inp=100, out=10, cost=0.25), spent,
               assistant("a2", "r1", provider="p1", model="m1", inp=150, out=5, cost=0.125)]
    s = await catalog.create()
    await append_all(s, *entries)
    imported, _ = await catalog.import_session({"type": "session", "id": "bulk", "cwd": ""}, entries, "a2")
    await counted(s)
    await counted(imported)
    if catalog.kind != "memory":
        await counted(await reopen(s.session_id))


async def counted(storage: SessionStorage) -> None:
    at = await storage.get_path_state("r1")
    assert (at.input_tokens, at.output_tokens, at.context_tokens) == (1100, 210, 110)
    assert at.cost_total == pytest.approx(0.75) and at.model == {"provider": "p1", "modelId": "m1"}
    end = await storage.get_path_state("a2")
    assert (end.input_tokens, end.context_tokens, end.message_count) == (1250, 155, 4)
    st = await storage.get_session_stats()
    assert (st.input_tokens, st.output_tokens, st.assistant_messages, st.tool_results) == (1250, 215, 2, 1)
    assert st.total_tokens == 1200 + 110 + 155 and st.cost_total == pytest.approx(0.875)


async def test_tree_rows_skeleton(catalog):
    s = await chain(catalog)
    await s.append_entry(model_change("m1", "a2", "p", "mm"))
    rows = await s.get_tree_rows()
    assert [(r.id, r.parent_id, r.type, r.role) for r in rows] == [
        ("u1", None, "message", "user"),
        ("a1", "u1", "message", "assistant"),
        ("u2", "a1", "message", "user"),
        ("a2", "u2", "message", "assistant"),
        ("m1", "a2", "model_change", None),
    ]
    assert rows[0].preview == "first question" and "p/mm" in rows[-1].preview


async def test_metadata(catalog):
    s = await catalog.create(cwd="/home/me/project")
    meta = await s.get_metadata()
    assert meta.id == s.session_id and meta.cwd == "/home/me/project" and meta.created_at
    assert meta.parent_session_id is None and meta.name is None


async def test_user_message_content_blocks_round_trip(catalog):
    s = await catalog.create()
    entry = user("u1", None)
    entry.message = UserMessage.model_validate({"content": [{"type": "text", "text": "block"}, {"type": "future", "x": 1}]})
    await s.append_entry(entry)
    got = await s.get_entry("u1")
    assert got.model_dump(by_alias=True) == entry.model_dump(by_alias=True)
