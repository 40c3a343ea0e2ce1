"""The App's tree index: branch counting as rows arrive equals counting from scratch."""

import random

from treechat.storage.base import TreeRow
from treechat.tui_view import TreeIndex


def recount(index: TreeIndex) -> int:
    return sum(1 for r in index.rows if r.type != "label"
               and not any(index.by_id[c].type != "label" for c in index.children.get(r.id, [])))


def test_incremental_branch_count_matches_a_full_recount():
    rng = random.Random(7)
    rows: list[TreeRow] = []
    for i in range(400):
        parent = rng.choice(rows).id if rows and rng.random() < 0.95 else None
        kind = "label" if rng.random() < 0.1 else "message"
        rows.append(TreeRow(f"e{i}", parent, kind, "user", "", f"{i:05d}"))
    built = TreeIndex.build(rows)
    assert built.branch_count() == recount(built)
    grown = TreeIndex()
    for row in rows:
        grown.add(row)
        assert grown.branch_count() == recount(grown)


def test_branch_count_of_a_built_index_that_grew_before_the_first_count():
    rng = random.Random(11)
    rows: list[TreeRow] = []
    for i in range(300):
        parent = rng.choice(rows).id if rows and rng.random() < 0.95 else None
        kind = "label" if rng.random() < 0.1 else "message"
        rows.append(TreeRow(f"e{i}", parent, kind, "user", "", f"{i:05d}"))
    built = TreeIndex.build(rows[:200])
    for row in rows[200:]:
        built.add(row)
    assert built.branch_count() == recount(built)
    built.add(TreeRow("last", "e5", "message", "user", "", "99999"))
    assert built.branch_count() == recount(built)
