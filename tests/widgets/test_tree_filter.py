"""A filter that filters (issue 11, item 5): ``/`` narrows the rows to the matches, highlights the
matched text, ``n``/``N`` jump between matches, Enter keeps the filter, Esc clears it."""
from rich.style import Style
from textual.binding import Binding

from tests.narrow import of
from treechat.storage.tree.index import TreeIndex
from treechat.widgets.tree.view import TreeView

from .helpers import Host, chain, row
from .tree_helpers import drawn, segments, shown_ids


def thirty_one() -> list:
    """The issue's case: 31 rows, one of which matches "flamingo", 25 rows deep."""
    rows = chain(26)
    rows[25] = rows[25]._replace(preview="the flamingo config")
    rows += [row(f"b{i}", "n10" if i == 0 else f"b{i - 1}", "user" if i % 2 else "assistant") for i in range(5)]
    return rows


class EscapeHost(Host):
    """An App-level Esc (the real App stops a run with it): the tree must let it through when it
    has no filter to clear."""

    BINDINGS = [Binding("escape", "app_escape", "stop")]

    def __init__(self, *widgets) -> None:
        super().__init__(*widgets)
        self.escapes = 0

    def action_app_escape(self) -> None:
        self.escapes += 1


async def test_one_match_is_one_row_and_its_text_is_highlighted():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        rows = thirty_one()
        tree.set_rows(rows, "b4", {r.id for r in rows[:11]} | {f"b{i}" for i in range(5)})
        tree.focus()
        await pilot.press("slash", *"flamingo")
        assert shown_ids(tree) == ["n25"]
        assert tree.cursor_id == "n25"  # the cursor goes to the match
        assert str(tree.border_subtitle).endswith("· 1 match")
        hit = [s for s in segments(tree, "n25") if s.text.lower() == "flamingo"]
        assert len(hit) == 1
        normal = next(s for s in segments(tree, "n25") if s.text.startswith(" config"))
        assert of(Style, hit[0].style).bgcolor != of(Style, normal.style).bgcolor or of(Style, hit[0].style).underline


async def test_the_forks_between_matches_are_kept_dimmed_and_n_skips_them():
    rows = [
        row("r", None, preview="start"), row("a", "r", "assistant", preview="answer"),
        row("p1", "a", preview="deploy to staging"), row("q1", "p1", "assistant", preview="deployed"),
        row("p2", "a", preview="something else"), row("q2", "p2", "assistant", preview="deploy failed"),
        row("z", "q2", preview="deploy again"),
    ]
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(rows, "z", {"r", "a", "p2", "q2", "z"})
        tree.focus()
        await pilot.press("slash", *"deploy", "enter")
        assert shown_ids(tree) == ["a", "p1", "q1", "q2", "z"]
        assert str(tree.border_subtitle).endswith("· 4 matches")
        dim = next(s for s in segments(tree, "a") if "answer" in s.text)
        assert of(Style, dim.style).color == tree.get_component_rich_style("tree-view--context").color
        tree.move_cursor_to("a")
        visited = []
        for _ in range(5):
            await pilot.press("n")
            visited.append(tree.cursor_id)
        assert visited == ["p1", "q1", "q2", "z", "p1"]  # wraps; the fork "a" is not a match
        await pilot.press("N", "N")
        assert tree.cursor_id == "q2"


async def test_enter_keeps_the_filter_for_navigation_and_esc_clears_it_on_the_same_row():
    tree = TreeView()
    app = EscapeHost(tree)
    async with app.run(size=(60, 20)) as pilot:
        rows = thirty_one()
        tree.set_rows(rows, "b4", {"n0"})
        tree.focus()
        await pilot.press("slash", *"text n1", "enter")  # n1, n10..n19
        assert len(tree.lines) == 11 and tree.match_count == 11
        await pilot.press("down", "down")
        chosen = tree.cursor_id
        assert tree.layout_data.query == "text n1"  # navigation keys did not edit the query
        await pilot.press("escape")
        assert tree.layout_data.query == "" and len(tree.lines) == 31
        assert tree.cursor_id == chosen
        assert app.escapes == 0  # the tree used that Esc
        await pilot.press("escape")
        assert app.escapes == 1  # no filter: Esc goes on to the App


async def test_keys_typed_into_the_filter_are_text_not_commands():
    tree = TreeView()
    app = EscapeHost(tree)
    async with app.run(size=(60, 20)) as pilot:
        tree.set_rows(thirty_one(), "b4", {"n0"})
        tree.focus()
        await pilot.press("slash", "5", "g", "n")
        assert tree.layout_data.query == "5gn" and tree.filter_mode == "default"
        assert "/5gn▏" in str(tree.border_subtitle)
        await pilot.press("backspace", "backspace", "backspace")
        assert tree.layout_data.query == ""
        await pilot.press("escape")  # while typing, Esc ends the filter and stays in the tree
        assert app.escapes == 0 and not tree.layout_data.query


async def test_a_query_matching_nothing_shows_nothing_and_clearing_it_restores_the_cursor():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        rows = chain(40)
        tree.set_rows(rows, "n39", {r.id for r in rows})
        tree.focus()
        tree.move_cursor_to("n7")
        await pilot.press("slash", *"zzz")
        assert tree.lines == [] and tree.cursor_id is None
        assert str(tree.border_subtitle).endswith("· 0 matches")
        await pilot.press("escape")
        assert tree.cursor_id == "n7"


async def test_the_filter_follows_rows_added_while_it_is_on():
    tree = TreeView()
    app = Host(tree)
    async with app.run(size=(60, 20)) as pilot:
        rows = chain(10)
        index = TreeIndex.build(rows)
        tree.set_index(index, "n9", {r.id for r in rows})
        tree.set_query("flamingo")
        await pilot.pause()
        assert tree.lines == []
        new = row("n10", "n9", "assistant", preview="a flamingo appears")
        index.add(new)
        tree.add_row(new)
        await pilot.pause()
        assert shown_ids(tree) == ["n10"] and "flamingo" in drawn(tree, "n10")
