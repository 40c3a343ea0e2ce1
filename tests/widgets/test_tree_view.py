from tests.narrow import of
from treechat.storage.base import TreeRow
from treechat.storage.tree.index import TreeIndex
from treechat.widgets.tree.drawing import gutter_prefix
from treechat.widgets.tree.layout import TreeLayout
from treechat.widgets.tree.view import TreeView

from .helpers import Host, chain, row
from .tree_helpers import drawn


def _drawn(layout: TreeLayout) -> list[str]:
    return [gutter_prefix(g, c, 12) + r.id for r, g, c, *_ in layout.lines]


BRANCHY = [
    row("a", None), row("b", "a", "assistant"),
    row("c", "b"), row("d", "c", "assistant", label="plan-a"),
    row("e", "b"), row("f", "e", "assistant"), row("g", "f"), row("h", "f"),
    row("s", "h", None, type="model_change"), row("t", "s", "assistant"),
    row("lv", "t", None, type="leaf"), row("tr", "t", "toolResult"),
]


def test_forks_indent_and_chains_do_not():
    layout = TreeLayout()
    layout.set_index(TreeIndex.build(BRANCHY))
    assert _drawn(layout) == ["a", "b", "├─c", "│ d", "└─e", "  f", "  ├─g", "  └─h", "    t", "    tr"]


def test_hidden_rows_reattach_children_and_leaf_entries_never_show():
    layout = TreeLayout()
    layout.mode = "all"
    layout.set_index(TreeIndex.build(BRANCHY))
    ids = [line[0].id for line in layout.lines]
    assert "s" in ids and "lv" not in ids
    layout.mode = "default"
    layout.rebuild()
    assert layout.visible_parent("t") == "h"  # the hidden model_change is skipped


def test_filters():
    layout = TreeLayout()
    layout.set_index(TreeIndex.build(BRANCHY))
    expected = {
        "no-tools": {"tr"},
        "user-only": {"b", "d", "f", "t", "tr"},
        "labeled": {"a", "b", "c", "e", "f", "g", "h", "t", "tr"},
    }
    for mode, gone in expected.items():
        layout.mode = mode
        layout.rebuild()
        ids = {line[0].id for line in layout.lines}
        assert not ids & gone, mode
    layout.mode = "labeled"
    layout.rebuild()
    assert [line[0].id for line in layout.lines] == ["d"]


def test_query_keeps_only_matches_and_the_forks_where_they_meet():
    layout = TreeLayout()
    layout.query = "text g"
    layout.set_index(TreeIndex.build(BRANCHY))
    assert [line[0].id for line in layout.lines] == ["g"]  # its ancestors are collapsed
    assert layout.matches == {"g"} and not layout.context
    rows = [r._replace(preview="deploy plan") if r.id == "d" else r._replace(preview="Deploy now") if r.id == "g" else r
            for r in BRANCHY]
    layout.query = "DEPLOY"
    layout.set_index(TreeIndex.build(rows))
    # d and g are on the two branches of b: b is kept (dimmed by the view) to show where they split
    assert _drawn(layout) == ["b", "├─d", "└─g"]
    assert layout.matches == {"d", "g"} and layout.context == {"b"}
    layout.query = "deploy plan"  # every word must match
    layout.rebuild()
    assert _drawn(layout) == ["d"]
    layout.query = ""
    layout.rebuild()
    assert len(layout.lines) == 10 and not layout.matches


def test_five_thousand_deep_chain_is_flat_and_does_not_recurse():
    layout = TreeLayout()
    layout.set_index(TreeIndex.build(chain(5000)))
    assert len(layout.lines) == 5000
    assert all(gutter_prefix(g, c, 12) == "" for _, g, c, *_ in layout.lines)


def test_deep_fork_nesting_is_capped_on_screen():
    rows = [row("r", None)]
    for i in range(40):  # every level forks: 40 nested levels
        parent = rows[-2].id if i else "r"
        rows += [row(f"x{i}", parent), row(f"y{i}", parent)]
    layout = TreeLayout()
    layout.set_index(TreeIndex.build(rows))
    widths = {len(gutter_prefix(g, c, 12)) for _, g, c, *_ in layout.lines}
    assert max(widths) <= 24


async def test_keys_post_messages():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(BRANCHY, "d", {"a", "b", "c", "d"})
        tree.focus()
        await pilot.pause()
        assert tree.cursor_id == "d"  # the cursor starts on the leaf
        await pilot.press("up", "enter", "space", "L", "f", "backspace")
        await pilot.pause()
        assert [type(m).__name__ for m in app.seen if isinstance(m, (TreeView.EntryMessage, TreeView.BackRequested))] == [
            "NodeChosen", "PreviewRequested", "LabelRequested", "ForkRequested", "BackRequested",
        ]
        assert {m.entry_id for m in app.posted(TreeView.NodeChosen)} == {"c"}
        await pilot.press("right_square_bracket")
        assert tree.cursor_id == "e"
        await pilot.press("left_square_bracket")
        assert tree.cursor_id == "c"
        await pilot.press("end", "g")
        assert tree.cursor_id == "d"


async def test_click_on_row_chooses_it():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(BRANCHY, "d", {"a", "b", "c", "d"})
        await pilot.pause()
        index = of(int, tree.layout_data.index_of("e"))
        region = tree.scrollable_content_region
        await pilot.click(TreeView, offset=(region.x - tree.region.x + 5, region.y - tree.region.y + index))
        await pilot.pause()
        assert [m.entry_id for m in app.posted(TreeView.NodeChosen)] == ["e"]


async def test_live_add_row_keeps_cursor_and_follows_leaf_only_from_the_leaf():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 10)) as pilot:
        rows = chain(50)
        index = TreeIndex.build(rows)
        tree.set_index(index, "n49", {r.id for r in rows})

        def grow(new: TreeRow) -> None:  # as the controller does: the index first, then the view
            index.add(new)
            tree.add_row(new)

        tree.focus()
        await pilot.pause()
        await pilot.press("home", "down")
        assert tree.cursor_id == "n1"
        top = tree.scroll_y
        grow(row("n50", "n49", "assistant"))
        grow(row("fork", "n10"))  # creates a fork: full rebuild
        await pilot.pause()
        assert tree.cursor_id == "n1" and tree.scroll_y == top
        assert tree.layout_data.index_of("n50") is not None
        tree.set_leaf("n50", {"n50"})
        assert tree.cursor_id == "n1"  # not on the leaf: does not follow
        await pilot.press("g")
        grow(row("n51", "n50"))
        tree.set_leaf("n51", {"n51"})
        assert tree.cursor_id == "n51"  # was on the leaf: follows it


async def test_type_to_filter_and_fold():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(BRANCHY, "d", {"a", "b", "c", "d"})
        tree.focus()
        await pilot.press("slash", *"text g", "enter")
        assert [line[0].id for line in tree.lines] == ["g"]
        await pilot.press("slash", "escape")
        assert len(tree.lines) == 10
        tree.move_cursor_to("b")
        await pilot.press("left")
        assert [line[0].id for line in tree.lines] == ["a", "b"]
        await pilot.press("right")
        assert len(tree.lines) == 10
        await pilot.press("3")
        assert tree.filter_mode == "user-only"


async def test_hundred_thousand_rows_render():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        rows = chain(100_000)
        tree.set_rows(rows, "n99999", {"n99999"})
        await pilot.pause()
        assert tree.cursor_id == "n99999"
        assert drawn(tree, "n99999").startswith("●")  # the leaf mark, on screen


# a fork under a hidden row (its children join the visible parent's in row order), an orphan
# (its parent was never stored) and a cycle
ODD = BRANCHY + [
    row("m", "b", None, type="model_change"), row("m1", "m"), row("b3", "b", "assistant"), row("m2", "m"),
    row("o", "missing"), row("o1", "o", "assistant"), row("x", "y"), row("y", "x"),
]


def test_rows_added_one_by_one_give_the_lines_of_the_whole_tree():
    for rows in (BRANCHY, ODD, chain(300)):
        for mode in ("default", "no-tools", "user-only", "labeled", "all"):
            whole, grown = TreeLayout(), TreeLayout()
            whole.mode = grown.mode = mode
            whole.folded = {"e"}
            grown.folded = {"e"}
            whole.set_index(TreeIndex.build(rows))
            index = TreeIndex.build(rows[:1])
            grown.set_index(index)
            for r in rows[1:]:
                index.add(r)
                grown.add_row(r)
            assert grown.lines == whole.lines, mode
            if rows is ODD and mode == "default":
                assert whole.siblings("b3") == ["c", "e", "m1", "b3", "m2"]  # row order, across the hidden m
            for r in rows:
                assert grown.siblings(r.id) == whole.siblings(r.id)
                assert grown.index_of(r.id) == whole.index_of(r.id)


def test_the_index_is_never_written_by_the_layout():
    index = TreeIndex.build(BRANCHY)
    layout = TreeLayout()
    layout.set_index(index)
    before = (dict(index.by_id), {k: list(v) for k, v in index.children.items()})
    layout.mode = "all"
    layout.folded = {"b"}
    layout.rebuild()
    layout.query = "text"
    layout.rebuild()
    assert (dict(index.by_id), {k: list(v) for k, v in index.children.items()}) == before
    layout.query, layout.folded, layout.mode = "", set(), "default"
    layout.rebuild()
    index.add(row("new", "g", "assistant"))
    layout.add_row(index.by_id["new"])
    assert layout.index_of("new") == of(int, layout.index_of("g")) + 1
    assert layout.siblings("new") == ["new"]


def test_a_skill_message_is_named_by_its_command_not_its_block():
    layout = TreeLayout()
    layout.set_index(TreeIndex.build([row("a", None, preview='<skill name="pdf" location="/s/pdf/SKILL.md">'),
                                      row("b", "a", "assistant", preview="<skill is not a block")]))
    assert [layout.preview(r) for r, *_ in layout.lines] == ["/skill:pdf", "<skill is not a block"]
