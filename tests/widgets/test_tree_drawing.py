"""Rows that read well at any width (issue 11, item 3): the gutter (leaf, active path, glyph) is
never cut, long rows end with an ellipsis, the cursor row has a visible background, glyphs say
what happened to a row, and hidden rows are counted as +N."""
import pytest
from rich.color import Color as RichColor
from rich.style import Style
from textual.color import Color

from tests.narrow import of
from treechat.widgets.textual_internals import screen_strips
from treechat.widgets.tree.view import TreeView

from .helpers import Host, chain, row
from .test_tree_view import BRANCHY
from .tree_helpers import drawn, segments, status_row

LONG = "a very long prompt that goes on and on, well past the width of any tree panel, " * 3
ROWS = [
    row("u1", None, preview="Let's refactor the auth module"),
    row("a1", "u1", "assistant", preview="Two approaches: A or B"),
    row("u2", "a1", preview="try approach A"),
    row("a2", "u2", "assistant", preview="Approach A done", label="A-done"),
    row("u3", "a1", preview="try approach B"),
    row("a3", "u3", "assistant", preview=LONG),
]
PATH = {"u1", "a1", "u3", "a3"}


def _contrast(a: Color, b: Color) -> float:
    def lum(c: Color) -> float:
        def f(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * f(c.r / 255) + 0.7152 * f(c.g / 255) + 0.0722 * f(c.b / 255)

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rgb(color: RichColor | None) -> Color:
    assert color is not None
    return Color.from_rich_color(color)


@pytest.mark.parametrize("width", [30, 44, 80])
async def test_the_leaf_mark_and_the_path_survive_any_width_and_long_rows_end_with_an_ellipsis(width):
    tree = TreeView()
    tree.styles.width = width
    app = Host(tree)
    async with app.run(size=(100, 12)) as pilot:
        tree.set_rows(ROWS, "a3", PATH)
        await pilot.pause()
        leaf = drawn(tree, "a3")
        inner = tree.scrollable_content_region.width
        assert len(leaf) == inner
        assert leaf.startswith("● ") and leaf.endswith("…")  # the mark first, the text cut with "…"
        assert drawn(tree, "u1").startswith("┃")  # on the active path
        assert drawn(tree, "u2").startswith(" ")  # another branch
        assert drawn(tree, "a2")[1] == "⚑" and "[A-done]" in drawn(tree, "a2")
        if width >= 44:
            assert drawn(tree, "u1").rstrip().endswith("module")  # short rows are not cut


async def test_the_cursor_row_has_a_visible_background_focused_or_not_in_dark_and_light_themes():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 12)) as pilot:
        tree.set_rows(ROWS, "a3", PATH)
        tree.move_cursor_to("a3")  # a full-width row: every cell must carry the background
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            for focused in (True, False):
                if focused:
                    tree.focus()
                else:
                    app.set_focus(None)
                await pilot.pause()
                base = _rgb(tree.rich_style.bgcolor)
                cells = segments(tree, "a3")
                backgrounds = {_rgb(s.style.bgcolor) for s in cells if s.text.strip() and s.style}
                assert len(backgrounds) == 1, (theme, focused, backgrounds)
                (cursor,) = backgrounds
                assert _contrast(cursor, base) >= 1.4, (theme, focused)
                for s in cells:  # the text on it stays readable
                    if s.text.strip() and s.style and s.style.color is not None:
                        assert _contrast(_rgb(s.style.color), cursor) >= 3.0, (theme, focused, s.text)
                other = {_rgb(s.style.bgcolor) for s in segments(tree, "u1") if s.style}
                assert other == {base}


async def test_the_active_path_connectors_are_drawn_in_the_path_colour():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 12)) as pilot:
        tree.set_rows(ROWS, "a3", PATH)
        await pilot.pause()
        on_path = next(s for s in segments(tree, "u3") if s.text == "└─")
        off_path = next(s for s in segments(tree, "u2") if "├─" in s.text)
        assert of(Style, on_path.style).color != of(Style, off_path.style).color


async def test_glyphs_for_error_and_aborted_replies_compactions_branch_summaries_and_labels():
    rows = [
        row("u1", None),
        status_row("e1", "u1", "error", preview="Error: 429 rate limited"),
        status_row("b1", "u1", "aborted", preview="half an answer"),
        row("k1", "u1", None, type="compaction", preview="Goal: refactor auth"),
        row("s1", "u1", None, type="branch_summary", preview="Tried approach A"),
        row("l1", "u1", "assistant", label="keep"),
        status_row("ok", "u1", None, preview="fine"),
    ]
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 12)) as pilot:
        tree.set_rows(rows, "ok", {"u1", "ok"})
        await pilot.pause()
        glyph = {rid: drawn(tree, rid)[1] for rid in ("e1", "b1", "k1", "s1", "l1", "ok", "u1")}
        assert glyph == {"e1": "✗", "b1": "⊘", "k1": "≡", "s1": "↩", "l1": "⚑", "ok": " ", "u1": " "}
        assert "compaction: Goal" in drawn(tree, "k1") and "branch summary: Tried" in drawn(tree, "s1")
        error_text = next(s for s in segments(tree, "e1") if "429" in s.text)
        assert of(Style, error_text.style).color == tree.get_component_rich_style("tree-view--error").color


async def test_folded_rows_and_alternatives_hidden_by_a_filter_show_how_many():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 16)) as pilot:
        tree.set_rows(BRANCHY, "d", {"a", "b", "c", "d"})
        tree.focus()
        tree.move_cursor_to("e")
        await pilot.press("left")  # fold e: f, g, h, t, tr go
        assert "⊞+5 " in drawn(tree, "e")
        await pilot.press("right")
        assert "+" not in drawn(tree, "e")
        tree.set_filter("labeled")  # only d shows; c (its parent) has no label
        await pilot.pause()
        assert "+" not in drawn(tree, "d")  # d has no alternatives
        tree.set_filter("default")
        tree.set_query("text c")  # c matches; its alternative e does not
        await pilot.pause()
        assert "+1 " in drawn(tree, "c")
        tree.set_query("")
        tree.move_cursor_to("c")
        await pilot.press("left")  # fold the leaf's parent: the mark moves to it, hollow
        assert drawn(tree, "c").startswith("○") and "⊞+1 " in drawn(tree, "c")


async def test_moving_the_cursor_in_a_scrolled_tree_repaints_the_rows_on_screen():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 12)) as pilot:
        rows = chain(300)
        tree.set_rows(rows, "n299", {r.id for r in rows})
        tree.focus()
        await pilot.pause()
        cursor_bg = tree.get_component_rich_style("tree-view--cursor").bgcolor

        def painted_rows() -> list[str]:  # the entries whose screen row shows the cursor background
            strips = screen_strips(app.screen)
            top, y0 = round(tree.scroll_y), tree.content_region.y
            return [tree.lines[top + y - y0][0].id for y, strip in enumerate(strips)
                    if y0 <= y < tree.content_region.bottom and any(s.style and s.style.bgcolor == cursor_bg for s in strip)]

        assert painted_rows() == ["n299"]
        await pilot.press("up", "up")
        assert painted_rows() == ["n297"]


async def test_back_at_a_width_drawn_before_the_rows_are_not_painted_again_and_read_the_same(monkeypatch):
    """(The painted lines are kept by what they show: a resize back, a page back, a key.)"""
    import treechat.widgets.tree.drawing as drawing

    painted: list[str] = []
    paint = drawing.paint

    def counted(line, *args, **kw):
        painted.append(line[0].id)
        return paint(line, *args, **kw)

    monkeypatch.setattr(drawing, "paint", counted)
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 12)) as pilot:
        tree.set_rows(ROWS, "a3", PATH)
        await pilot.pause()
        wide = {entry_id: drawn(tree, entry_id) for entry_id in ("u1", "a2", "a3")}
        tree.styles.width = 34  # (the panel's width is fixed: 44 columns)
        await pilot.pause()
        narrow = {entry_id: drawn(tree, entry_id) for entry_id in wide}
        assert all(len(narrow[k]) < len(wide[k]) for k in wide), (narrow, wide)  # drawn to the new width
        painted.clear()
        tree.styles.width = 44
        await pilot.pause()
        assert {entry_id: drawn(tree, entry_id) for entry_id in wide} == wide
        assert painted == [], painted  # every row on screen was painted at this width before
        tree.move_cursor_to("u1")  # what changes is painted anew: the old and the new cursor rows
        await pilot.pause()
        assert sorted(painted) == ["a3", "u1"]
