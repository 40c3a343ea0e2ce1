"""The tree opens where you are: the leaf row selected and on screen, whenever the rows arrive,
whatever the panel's size, and again after every move of the leaf (issue 11, item 2)."""

import pytest
from textual.app import ComposeResult

from treechat.storage.tree_index import TreeIndex
from treechat.widgets.tree.view import TreeView

from ..narrow import of
from .helpers import Host, chain, row
from .tree_helpers import drawn, on_screen


def forked(n: int) -> list:
    """A chain of n messages with a second branch forking off near the top."""
    rows = chain(n)
    rows += [row("x1", "n3", "user", preview="another idea"), row("x2", "x1", "assistant")]
    return rows


class OpensOnMount(Host):
    """Hands the rows over in on_mount, as the App does: before the panel has a size."""

    def __init__(self, rows: list, leaf: str, hidden: bool = False) -> None:
        self.panel = TreeView(id="tree")
        super().__init__(self.panel)
        self.rows, self.leaf, self.hidden = rows, leaf, hidden

    def compose(self) -> ComposeResult:
        yield self.panel

    def on_mount(self) -> None:
        if self.hidden:
            self.panel.display = False
        index = TreeIndex.build(self.rows)
        self.panel.set_index(index, self.leaf, set(index.path_ids(self.leaf)))


async def test_a_big_session_opens_with_the_leaf_selected_and_in_view():
    app = OpensOnMount(forked(1018), "n1017")
    async with app.run(size=(60, 24)) as pilot:
        await pilot.pause()
        tree = app.panel
        assert tree.cursor_id == "n1017"
        assert tree.scroll_y > 900  # not the first rows
        assert on_screen(tree, "n1017")
        assert drawn(tree, "n1017").startswith("●")


async def test_a_tree_hidden_at_first_shows_the_leaf_when_it_is_shown():
    app = OpensOnMount(forked(600), "n599", hidden=True)
    async with app.run(size=(60, 24)) as pilot:
        await pilot.pause()
        app.panel.display = True
        await pilot.pause()
        assert app.panel.cursor_id == "n599" and on_screen(app.panel, "n599")


@pytest.mark.slow  # a hundred thousand entries
async def test_a_hundred_thousand_entries_open_at_the_leaf():
    rows = chain(100_000)
    app = OpensOnMount(rows, "n99999")
    async with app.run(size=(60, 20)) as pilot:
        await pilot.pause()
        assert app.panel.cursor_id == "n99999" and on_screen(app.panel, "n99999")
        assert app.panel.border_subtitle == "default · 100000/100000"  # counted after the first frame


async def test_after_a_move_the_new_leaf_is_selected_and_scrolled_into_view():
    app = OpensOnMount(forked(500), "n499")
    async with app.run(size=(60, 20)) as pilot:
        await pilot.pause()
        tree, index = app.panel, TreeIndex.build(forked(500))
        tree.set_leaf("x2", set(index.path_ids("x2")))  # the cursor was on the old leaf: it follows
        await pilot.pause()
        assert tree.cursor_id == "x2" and on_screen(tree, "x2")
        tree.set_leaf("n10", set(index.path_ids("n10")))
        tree.move_cursor_to("n10")  # what the App does after a move
        await pilot.pause()
        assert tree.cursor_id == "n10" and on_screen(tree, "n10")
        assert drawn(tree, "n10").startswith("●")


async def test_resizes_keep_the_cursor_on_screen():
    app = OpensOnMount(forked(2000), "n1999")
    async with app.run(size=(100, 45)) as pilot:
        await pilot.pause()
        tree = app.panel
        tree.focus()
        await pilot.press("pageup", "pageup")
        for size in ((80, 24), (160, 45), (40, 12), (100, 45)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            assert on_screen(tree, of(str, tree.cursor_id)), size
