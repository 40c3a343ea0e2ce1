"""Pi 0.73.1's session-manager tests (labels, save-entry, tree-traversal) ported, on every backend,
plus what treechat adds: an unknown id writes nothing, a parent cycle never hangs."""

from __future__ import annotations

import pytest

from treechat.session.session import Session
from treechat.storage.base import EntryNotFoundError
from treechat.storage.model import CompactionEntry, LabelEntry, LeafEntry
from treechat.storage.tree_index import TreeIndex

from .helpers import assistant, msg_entry, texts, user


@pytest.fixture
async def session(catalog):
    return await Session.open(await catalog.create(cwd="/tmp"))


async def tree_of(session: Session) -> TreeIndex:
    return TreeIndex.build(await session.storage.get_tree_rows())


async def test_appends_chain_through_every_entry_type(session):
    assert session.leaf_id is None
    u = await session.append_message(user("q"))
    t = await session.append_thinking_level_change("high")
    m = await session.append_model_change("openai", "gpt-4")
    c = await session.append_compaction("sum", u, 1234)
    x = await session.append_custom("my_data", {"foo": "bar"})
    a = await session.append_message(assistant("r"))
    branch = await session.get_branch()
    assert [e.id for e in branch] == [u, t, m, c, x, a]
    assert branch[0].parent_id is None
    assert all(branch[i].parent_id == branch[i - 1].id for i in range(1, len(branch)))
    comp = await session.get_entry(c)
    assert isinstance(comp, CompactionEntry)
    assert (comp.summary, comp.first_kept_entry_id, comp.tokens_before) == ("sum", u, 1234)
    assert session.leaf_id == a == await session.storage.get_leaf_id()


async def test_custom_entry_is_not_a_message(session):
    u = await session.append_message(user("q"))
    c = await session.append_custom("my_data", {"foo": "bar"})
    a = await session.append_message(assistant("r"))
    assert (await session.get_entry(c)).parent_id == u
    assert [e.id for e in await session.get_branch()] == [u, c, a]
    assert len((await session.build_session_context()).messages) == 2


async def test_get_branch(session):
    assert await session.get_branch() == []
    one = await session.append_message(user("1"))
    assert [e.id for e in await session.get_branch()] == [one]
    two = await session.append_message(assistant("2"))
    await session.append_thinking_level_change("low")
    await session.append_message(user("3"))
    assert len(await session.get_branch()) == 4
    assert [e.id for e in await session.get_branch(two)] == [one, two]


async def test_move_to_then_append_makes_a_sibling(session):
    one = await session.append_message(user("1"))
    two = await session.append_message(assistant("2"))
    await session.append_message(user("3"))
    await session.move_to(two)
    assert session.leaf_id == two
    four = await session.append_message(user("4"))
    assert (await session.get_entry(four)).parent_id == two
    assert texts(await session.build_session_context()) == ["1", "2", "4"]
    tree = await tree_of(session)
    assert tree.children[None] == [one]
    assert len(tree.siblings(four)) == 2 and tree.branch_count() == 2


async def test_move_to_persists_the_leaf(catalog):
    s = await Session.open(await catalog.create())
    one = await s.append_message(user("1"))
    await s.append_message(assistant("2"))
    await s.move_to(one)
    assert await s.storage.get_leaf_id() == one
    leaves = await s.storage.find_entries("leaf")
    assert isinstance(leaves[-1], LeafEntry) and leaves[-1].target_id == one
    reopened = await Session.open(await catalog.open(s.session_id))
    assert reopened.leaf_id == one


async def test_move_to_unknown_id_raises_and_writes_nothing(session):
    await session.append_message(user("1"))
    before = await session.storage.get_entries()
    with pytest.raises(EntryNotFoundError, match="nonexistent"):
        await session.move_to("nonexistent")
    with pytest.raises(EntryNotFoundError, match="nonexistent"):
        await session.move_to("nonexistent", summary="s")
    with pytest.raises(EntryNotFoundError, match="non-existent"):
        await session.append_label("non-existent", "x")
    assert len(await session.storage.get_entries()) == len(before)


async def test_move_with_summary_appends_branch_summary(session):
    one = await session.append_message(user("1"))
    await session.append_message(assistant("2"))
    await session.move_to(one, summary="what we tried")
    leaf = await session.get_entry(session.leaf_id)
    assert leaf.type == "branch_summary" and leaf.parent_id == one and leaf.from_id == one
    await session.move_to(None, summary="from the top")
    top = await session.get_entry(session.leaf_id)
    assert top.parent_id is None and top.from_id == "root"


async def test_reset_leaf_starts_a_new_root(session):
    await session.append_message(user("1"))
    await session.reset_leaf()
    assert session.leaf_id is None
    assert (await session.build_session_context()).messages == []
    second_root = await session.append_message(user("again"))
    assert (await session.get_entry(second_root)).parent_id is None
    assert len((await tree_of(session)).children[None]) >= 2


async def test_tree_children_three_branches_and_deep(session):
    one = await session.append_message(user("1"))
    two = await session.append_message(assistant("2"))
    three = await session.append_message(user("3"))
    await session.append_message(assistant("4"))
    await session.move_to(two)
    five = await session.append_message(user("5"))
    await session.append_message(assistant("6"))
    await session.move_to(five)
    await session.append_message(assistant("7"))
    tree = await tree_of(session)

    def msg_children(i):
        return {c for c in tree.children.get(i, ()) if tree.by_id[c].type == "message"}

    assert msg_children(two) == {three, five}
    assert tree.siblings(three) == [three, five]  # oldest first
    assert len(msg_children(five)) == 2
    assert len(msg_children(three)) == 1
    assert tree.children[None] == [one]
    assert tree.branch_count() == 3


async def test_labels_last_wins_and_clear(session):
    u = await session.append_message(user("q"))
    a = await session.append_message(assistant("r"))
    await session.append_label(u, "first")
    await session.append_label(u, "second")
    await session.append_label(u, "third")
    assert await session.get_label(u) == "third"
    await session.append_label(a, "response")
    tree = await tree_of(session)
    assert tree.by_id[u].label == "third"
    assert tree.by_id[a].label == "response"
    assert tree.branch_count() == 1  # labels never make a branch
    await session.append_label(u, None)
    assert await session.get_label(u) is None
    labels = await session.storage.find_entries("label")
    assert isinstance(labels[0], LabelEntry) and labels[0].target_id == u and labels[0].label == "first"
    # a label is not a message
    assert len((await session.build_session_context()).messages) == 2


async def test_session_name_last_wins_trimmed_and_global(session):
    await session.append_message(user("q"))
    await session.append_session_info("  first name ")
    assert await session.get_session_name() == "first name"
    await session.move_to(None)
    await session.append_session_info("second")
    assert await session.get_session_name() == "second"
    await session.append_session_info("   ")
    assert await session.get_session_name() is None


async def test_cycles_are_broken_on_import_and_reported(catalog):
    storage, report = await catalog.import_session({}, [
        msg_entry("a", None, user("root")),
        msg_entry("self", "self", user("self-parented")),
        msg_entry("x", "y", user("x")), msg_entry("y", "x", user("y")),
    ], "a")
    assert report.repaired == 2 and any("cycle" in p for p in report.problems)
    s = await Session.open(storage)
    tree = await tree_of(s)  # building it, walking paths and counting branches never hang
    assert set(tree.children[None]) == {"a", "self", "x"}  # the cycle's first entry became a root
    assert len((await s.build_session_context("y")).messages) == 2
    assert [e.id for e in await s.get_branch("self")] == ["self"]
