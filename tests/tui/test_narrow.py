"""At any size (issue 11): under 110 columns the tree is a drawer over the transcript, the
footer shows fewer hints instead of cut ones (tests/tui/test_footer.py), and toasts come one at a time, away from the
composer."""

from __future__ import annotations

from treechat.widgets.composer.view import Composer
from treechat.widgets.textual_internals import (
    component_classes,
    component_styles_patched,
    forget_component_styles,
    notifications,
)
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import type_text, wait_for
from .test_tree_nav import click_row, seed


async def test_at_80_columns_a_reply_gets_the_width_and_the_tree_is_a_drawer(make_app, fake):
    fake.script_openai(["a reply " * 40])
    async with make_app(size=(80, 24)) as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("q1", "a1"), ("q2", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()
        assert app.has_class("-narrow") and not app.ui(TreeView).display
        assert app.ui(Transcript).size.width >= 78  # the whole width for the conversation
        await pilot.press("ctrl+b")
        await pilot.pause()
        tree = app.ui(TreeView)
        assert tree.display and tree.has_focus and tree.region.width >= 60
        await click_row(pilot, ids[1])  # choosing a row moves there and closes the drawer
        await wait_for(pilot, lambda: app.chat.leaf_id == ids[1], what="the move")
        await pilot.pause()
        assert not app.ui(TreeView).display and app.ui(Composer).has_focus
        app.panel.fit(160)  # wide again: the panel is back
        await pilot.pause()
        assert not app.has_class("-narrow") and app.ui(TreeView).display


async def test_esc_closes_the_drawer_and_typing_goes_to_the_composer(make_app):
    async with make_app(size=(80, 24)) as (app, pilot):
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert app.ui(TreeView).display and app.ui(TreeView).has_focus
        await pilot.press("escape")  # nothing runs, nothing is previewed: the drawer closes
        await pilot.pause()
        assert not app.ui(TreeView).display and app.ui(Composer).has_focus
        await type_text(pilot, "/mcp")  # not the tree's filter: the composer has all of it
        assert app.ui(Composer).text == "/mcp"


async def test_one_toast_at_a_time(make_app):
    async with make_app() as (app, pilot):
        app.notify("first")
        app.notify("second")
        await pilot.pause()
        assert [n.message for n in notifications(app)] == ["second"]
        await type_text(pilot, "x")


async def test_opening_closing_and_docking_the_tree_restyles_the_tree_alone(make_app):
    """The App's classes that place the tree panel restyle the panel, not every widget of the
    screen (with a transcript mounted that was 50-150 ms in the frame of Ctrl+B or a resize)."""
    from treechat.widgets.transcript.message_view import MessageView

    async with make_app(size=(160, 40)) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("q1", "a1"), ("q2", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 4, what="the transcript")
        restyled: list = []
        update_nodes = app.stylesheet.update_nodes

        def watched(nodes, animate=False):
            nodes = list(nodes)
            restyled.extend(nodes)
            return update_nodes(nodes, animate=animate)

        app.stylesheet.update_nodes = watched
        tree = app.ui(TreeView)
        await pilot.press("ctrl+b", "ctrl+b")  # into the tree, then closed
        await wait_for(pilot, lambda: not tree.display and app.ui(Composer).has_focus, what="the tree closed")
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: tree.display and tree.region.width > 0, what="the tree open")
        await pilot.resize_terminal(80, 24)  # a drawer over the transcript
        await wait_for(pilot, lambda: app.has_class("-narrow") and tree.styles.dock == "right"
                       and tree.region.width >= 60, what="the drawer")
        await pilot.resize_terminal(160, 40)
        await wait_for(pilot, lambda: not app.has_class("-narrow") and tree.styles.dock == "none"
                       and tree.region.width == 44, what="the panel back")
        assert tree in restyled
        assert not [node for node in restyled if isinstance(node, MessageView)]


async def test_placing_the_panel_keeps_its_parts_styled_as_a_full_restyle_would(make_app):
    """(The panel's restyle skips its component classes: no rule styles them by the panel's classes.)"""
    from treechat.tui.tree.panel import PANEL_CLASSES

    async with make_app(size=(160, 40)) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("q1", "a1"), ("q2", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        tree = app.ui(TreeView)
        tree.focus()
        await pilot.pause()
        names = sorted(component_classes(tree))

        def parts() -> dict[str, object]:
            return {name: tree.get_component_rich_style(name) for name in names}

        for size in ((80, 24), (160, 40), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            placed = parts()
            app.stylesheet.update_nodes([tree])  # Textual's whole restyle, component classes included
            forget_component_styles(tree)
            assert parts() == placed, size
        assert any(app.has_class(name) for name in PANEL_CLASSES)
        assert not component_styles_patched(app.stylesheet)
