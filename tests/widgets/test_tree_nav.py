"""Moving around the tree: ``{``/``}`` jump between the fork points on the path through the
cursor, and hovering a row shows its time and kind at once, its model and tokens when the App
answers (issue 11, item 3)."""

from textual.content import Content

from treechat.widgets.tree.tooltip import local_time
from treechat.widgets.tree.view import TreeView

from ..narrow import of
from .helpers import Host, chain, row

# r ─ a ─ u1 ─ b1 ─ u2 ─ c1 ─ u3 ─ d1   (the active path: forks at a, b1, c1)
#      └ x1          └ y1      └ z1 ─ z2
ROWS = [
    row("r", None), row("a", "r", "assistant"),
    row("u1", "a"), row("x1", "a"),
    row("b1", "u1", "assistant"), row("u2", "b1"), row("y1", "b1"),
    row("c1", "u2", "assistant"), row("u3", "c1"), row("z1", "c1"), row("z2", "z1", "assistant"),
    row("d1", "u3", "assistant"),
]
ACTIVE = {"r", "a", "u1", "b1", "u2", "c1", "u3", "d1"}


async def test_braces_jump_between_the_forks_on_the_path_through_the_cursor():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(ROWS, "d1", ACTIVE)
        tree.focus()
        await pilot.pause()
        assert tree.cursor_id == "d1"
        seen = []
        for _ in range(4):
            await pilot.press("left_curly_bracket")
            seen.append(tree.cursor_id)
        assert seen == ["c1", "b1", "a", "a"]  # the top: stays (and rings the bell)
        seen = []
        for _ in range(4):
            await pilot.press("right_curly_bracket")
            seen.append(tree.cursor_id)
        assert seen == ["b1", "c1", "c1", "c1"]  # down the active path; c1 is the last fork
        tree.move_cursor_to("z2")  # off the active path: up to where its branch split off
        await pilot.press("left_curly_bracket")
        assert tree.cursor_id == "c1"
        tree.move_cursor_to("x1")
        await pilot.press("left_curly_bracket")
        assert tree.cursor_id == "a"


async def test_right_brace_off_the_active_path_follows_the_newest_child():
    rows = [row("r", None), row("a", "r", "assistant"), row("u1", "a"), row("u2", "a"),
            row("b2", "u2", "assistant"), row("v1", "b2"), row("v2", "b2")]
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(rows, "u1", {"r", "a", "u1"})
        tree.focus()
        tree.move_cursor_to("r")
        await pilot.press("right_curly_bracket")
        assert tree.cursor_id == "a"
        tree.set_leaf("v1", {"r", "a", "u2", "b2", "v1"})
        tree.move_cursor_to("a")
        await pilot.press("right_curly_bracket")
        assert tree.cursor_id == "b2"  # along the active path, through u2


async def test_hover_shows_time_and_kind_at_once_and_asks_the_app_for_the_rest():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(chain(5), "n4", {"n0", "n1", "n2", "n3", "n4"})
        await pilot.pause()
        at = of(int, tree.layout_data.index_of("n1")) - round(tree.scroll_y)
        region = tree.scrollable_content_region
        offset = (region.x - tree.region.x + 6, region.y - tree.region.y + at)
        await pilot.hover(TreeView, offset=offset)
        assert isinstance(tree.tooltip, Content)
        first = str(tree.tooltip)
        assert first == f"assistant reply · {local_time('2024-01-01T00:00:00.000Z')}"
        assert app.posted(TreeView.DetailsRequested) == []  # not yet: the pointer has not rested
        await pilot.pause(0.5)
        assert [m.entry_id for m in app.posted(TreeView.DetailsRequested)] == ["n1"]
        tree.set_details("n1", "gpt-4o · 1,234 in / 56 out tokens\x1b[2J")
        assert str(tree.tooltip) == first + "\ngpt-4o · 1,234 in / 56 out tokens"  # sanitized
        tree.set_details("n3", "not hovered")
        assert "not hovered" not in str(tree.tooltip)
        await pilot.hover(TreeView, offset=(offset[0], offset[1] + 1))
        assert str(tree.tooltip).startswith("user message · ")


def test_local_time_reads_iso_stamps_and_keeps_what_does_not_parse():
    assert local_time("2024-05-06T07:08:09.000Z")[:4] == "2024"
    assert local_time("yesterday\x1b[2J") == "yesterday"
