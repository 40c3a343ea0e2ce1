"""The footer (issue 26): one line of the focused context's key hints, generated from the keymap,
fitted to the width (fewer hints, never cut ones; the palette key stays), a click on a hint
presses its key; and a focus change is a repaint of that line, not a rebuild of widgets."""

from __future__ import annotations

from treechat.widgets.chrome.fitted_footer import FittedFooter
from treechat.widgets.composer.view import Composer
from treechat.widgets.keymap import display_key, keys_for
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import screen_text, wait_for
from .test_tree_nav import seed


def footer_line(app) -> str:
    return screen_text(app).splitlines()[-1]


WHERE_IT_ACTS = {"Open sub-agent"}  # shown only on the row it acts on (a sub-agent's result)


def shown_in(context: str) -> list[str]:
    return [k.description for k in keys_for(context) if k.show and k.description not in WHERE_IT_ACTS]


async def test_the_footer_shows_the_focused_contexts_keys_and_follows_the_focus(make_app):
    async with make_app(size=(200, 40)) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("q1", "a1"), ("q2", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()
        footer = app.query_one(FittedFooter)
        assert app.ui(Composer).has_focus
        line = footer_line(app)
        for description in shown_in("composer") + ["Tree", "Sessions", "Search", "Help"]:
            assert description in line
        assert "Move leaf here" not in line
        assert line.rstrip().endswith("Palette")  # the palette key on the right
        assert "F2 / Ctrl+B" not in line and display_key("f2") in line  # one hint per action: not tmux's prefix

        app.ui(TreeView).focus()
        await wait_for(pilot, lambda: "Move leaf here" in footer_line(app), what="the tree's hints")
        line = footer_line(app)
        for description in shown_in("tree"):
            assert description in line
        assert "Send (running: steer)" not in line
        assert [h.description for h in footer.hints if not h.palette][: len(shown_in("tree"))] == shown_in("tree")

        app.ui(Transcript).focus()
        await pilot.press("end")  # a message selected: the transcript's letters act on it
        await wait_for(pilot, lambda: "Fork from here" in footer_line(app), what="the transcript hints")


async def test_a_focus_change_rebuilds_no_widgets(make_app):
    """Textual's footer recomposed a widget per hint on every focus change (a mount and a layout in
    the frame the next key waited for); this one repaints its line."""
    async with make_app(size=(160, 40)) as (app, pilot):
        footer = app.query_one(FittedFooter)
        before = list(app.screen.walk_children())
        assert not footer.children
        app.ui(TreeView).focus()
        await wait_for(pilot, lambda: "Move leaf here" in footer_line(app), what="the tree's hints")
        app.ui(Composer).focus()
        await wait_for(pilot, lambda: "Move leaf here" not in footer_line(app), what="the composer's hints")
        assert list(app.screen.walk_children()) == before


async def test_the_footer_shows_fewer_hints_rather_than_cut_ones(make_app):
    async with make_app(size=(80, 24)) as (app, pilot):
        await pilot.pause(0.2)
        footer = app.query_one(FittedFooter)
        line = footer_line(app)
        shown, hints = footer.shown, footer.hints
        assert len(shown) < len(hints), "at 80 columns not every hint fits"
        assert len(line.rstrip()) <= 80
        for hint in shown:
            assert "".join(hint.parts) in line  # every hint shown is shown whole
        hidden = [h for h in hints if h not in shown]
        for hint in hidden:
            assert hint.description not in line
        assert line.rstrip().endswith("Palette")  # the palette key stays
        await pilot.resize_terminal(200, 24)
        await wait_for(pilot, lambda: len(footer.shown) > len(shown), what="more hints at 200 columns")
        for hint in footer.shown:
            assert "".join(hint.parts) in footer_line(app)


async def test_a_click_on_a_hint_presses_its_key(make_app):
    async with make_app(size=(160, 40)) as (app, pilot):
        await pilot.pause()
        footer = app.query_one(FittedFooter)
        assert not app.has_class("-tree-hidden")
        line = footer_line(app)
        x = line.index("Tree")  # Ctrl+B: into the tree panel, then it hides
        assert footer.hint_at(x) is not None and footer.hint_at(x).action == "toggle_tree"
        await pilot.click(FittedFooter, offset=(x, 0))
        await wait_for(pilot, lambda: app.ui(TreeView).has_focus, what="the tree focused by the click")
        x = footer_line(app).index("Tree")  # (the tree's own hints come first now)
        await pilot.click(FittedFooter, offset=(x, 0))
        await wait_for(pilot, lambda: app.has_class("-tree-hidden"), what="the tree hidden by the click")
        await pilot.pause()
        await pilot.click(FittedFooter, offset=(footer_line(app).index("Tree"), 0))
        await wait_for(pilot, lambda: not app.has_class("-tree-hidden"), what="the tree back")
        x = footer_line(app).rindex("Palette")
        await pilot.click(FittedFooter, offset=(x, 0))
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette", what="the palette")
