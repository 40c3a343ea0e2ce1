"""At any size (issue 11): under 110 columns the tree is a drawer over the transcript, the
footer shows fewer hints instead of cut ones, and toasts come one at a time, away from the
composer."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from treechat.widgets.composer.view import Composer
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import screen_text, type_text, wait_for
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
        app.fit_width(160)  # wide again: the panel is back
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


async def test_the_footer_shows_fewer_hints_rather_than_cut_ones(make_app):
    async with make_app(size=(80, 24)) as (app, pilot):
        await pilot.pause(0.2)
        footer_line = screen_text(app).splitlines()[-1]
        shown = [k for k in app.query(FooterKey) if k.display]
        hidden = [k for k in app.query(FooterKey) if not k.display]
        assert hidden, "at 80 columns not every hint fits"
        for key in shown:
            assert key.description in footer_line  # every hint shown is shown whole


async def test_one_toast_at_a_time(make_app):
    async with make_app() as (app, pilot):
        app.notify("first")
        app.notify("second")
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["second"]
        await type_text(pilot, "x")
