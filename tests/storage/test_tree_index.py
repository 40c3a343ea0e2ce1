"""The one tree model (storage.tree.index): sibling order, alternatives, and branches that only
the conversation makes, counted the same way whether rows arrive one by one or all at once."""

import random

from treechat.storage.base import TreeRow
from treechat.storage.tree.index import CONVERSATION_TYPES, TreeIndex

KINDS = ["message"] * 6 + ["label", "session_info", "model_change", "thinking_level_change", "compaction",
                           "branch_summary", "custom"]


def recount(index: TreeIndex) -> int:
    """Conversation rows with no conversation row anywhere below them, by brute force."""
    def has_conv_below(entry_id: str) -> bool:
        stack = list(index.children.get(entry_id, ()))
        while stack:
            kid = stack.pop()
            if index.by_id[kid].type in CONVERSATION_TYPES:
                return True
            stack.extend(index.children.get(kid, ()))
        return False

    return sum(1 for r in index.by_id.values() if r.type in CONVERSATION_TYPES and not has_conv_below(r.id))


def random_rows(seed: int, n: int) -> list[TreeRow]:
    rng = random.Random(seed)
    rows: list[TreeRow] = []
    for i in range(n):
        parent = rng.choice(rows).id if rows and rng.random() < 0.97 else None
        rows.append(TreeRow(f"e{i}", parent, rng.choice(KINDS), "user", "", f"2026-01-01T00:00:{i % 60:02d}.{i:03d}Z"))
    return rows


def test_incremental_branch_count_matches_a_full_recount() -> None:
    rows = random_rows(7, 400)
    built = TreeIndex.build(rows)
    assert built.branch_count() == recount(built)
    grown = TreeIndex()
    grown.branch_count()  # counting from the start, then one row at a time
    for row in rows:
        grown.add(row)
        assert grown.branch_count() == recount(grown)


def test_branch_count_of_a_built_index_that_grew_before_the_first_count() -> None:
    rows = random_rows(11, 300)
    built = TreeIndex.build(rows[:200])
    for row in rows[200:]:
        built.add(row)
    assert built.branch_count() == recount(built)
    built.add(TreeRow("last", "e5", "message", "user", "", "2026-01-02T00:00:00Z"))
    assert built.branch_count() == recount(built)


def test_a_linear_chat_with_names_labels_and_settings_is_one_branch() -> None:
    t = iter(f"2026-01-01T00:00:{s:02d}Z" for s in range(60))
    rows = [TreeRow("u1", None, "message", "user", "hi", next(t)),
            TreeRow("a1", "u1", "message", "assistant", "hello", next(t)),
            TreeRow("n", "a1", "session_info", None, "", next(t)),
            TreeRow("l", "n", "label", None, "", next(t)),
            TreeRow("m", "l", "model_change", None, "", next(t)),
            TreeRow("u2", "m", "message", "user", "more", next(t)),
            TreeRow("a2", "u2", "message", "assistant", "sure", next(t)),
            TreeRow("l2", "a2", "label", None, "", next(t))]
    assert TreeIndex.build(rows).branch_count() == 1
    grown = TreeIndex()
    grown.branch_count()
    for row in rows:
        grown.add(row)
    assert grown.branch_count() == 1


def test_siblings_are_conversation_children_in_timestamp_order_whatever_the_arrival() -> None:
    rows = [TreeRow("root", None, "message", "user", "q", "2026-01-01T00:00:00Z"),
            TreeRow("late", "root", "message", "assistant", "b", "2026-01-01T00:00:09Z"),
            TreeRow("early", "root", "message", "assistant", "a", "2026-01-01T00:00:05Z"),
            TreeRow("setting", "root", "model_change", None, "", "2026-01-01T00:00:07Z")]
    built = TreeIndex.build(rows)
    assert built.siblings("late") == ["early", "late"]
    assert list(built.children["root"]) == ["early", "setting", "late"]
    grown = TreeIndex()
    for row in rows:
        grown.add(row)
    assert list(grown.children["root"]) == list(built.children["root"])
    assert grown.newest_tip_under("root") == "late"


def test_relabel_replaces_the_row_in_place() -> None:
    index = TreeIndex.build([TreeRow("a", None, "message", "user", "q", "2026-01-01T00:00:00Z"),
                             TreeRow("b", "a", "message", "assistant", "r", "2026-01-01T00:00:01Z")])
    row = index.relabel("a", "keep")
    assert row is not None and index.by_id["a"].label == "keep" and list(index.by_id) == ["a", "b"]


async def test_failed_and_stopped_replies_carry_their_status_on_every_backend(catalog) -> None:
    from treechat.session.session import Session
    from treechat.storage.model import AssistantMessage, TextContent, UserMessage

    s = await Session.open(await catalog.create())
    await s.append_message(UserMessage(content="q"))
    ok = await s.append_message(AssistantMessage(content=[TextContent(text="fine")], provider="p", model="m"))
    failed = await s.append_message(AssistantMessage(content=[TextContent(text="")], provider="p", model="m",
                                                     stop_reason="error", error_message="boom"))
    stopped = await s.append_message(AssistantMessage(content=[TextContent(text="half")], provider="p", model="m",
                                                      stop_reason="aborted"))
    rows = {r.id: r for r in await s.storage.get_tree_rows()}
    assert (rows[ok].status, rows[failed].status, rows[stopped].status) == (None, "error", "aborted")
