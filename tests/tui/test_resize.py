"""The TUI inside one frame (issue 26). A resize is one layout at the new size: the tree panel is
placed for the new width before it, never laid out at the old size; its first frame shows the
tree's cursor and paints the messages (no frame after it paints them again); going back to a width seen before draws the messages
at that width; a scrollbar that comes with a resize narrows what is beside it. Keys typed while a
reply streams: every token is shown once they stop."""

from __future__ import annotations

import asyncio
from functools import partial

from treechat.widgets.composer.view import Composer
from treechat.widgets.textual_internals import (
    CoveredCompositor,
    CoveredScreen,
    compositor_class,
    count_layouts,
    on_display,
    render_chops,
    textual_compositor,
)
from treechat.widgets.transcript.markdown_body import MarkdownBody
from treechat.widgets.transcript.message_view import MessageView
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import idle, screen_text, wait_for
from .test_tree_nav import seed

NARROW = 110


def at_width(app, width: int) -> bool:
    return app.screen.outer_size.width == width


def watch_layouts(app) -> list[tuple[int, bool]]:
    """(width laid out at, whether the panel was placed as narrow) of every layout of the screen."""
    seen: list[tuple[int, bool]] = []
    screen = app.screen
    count_layouts(screen, lambda: seen.append((screen.outer_size.width, app.has_class("-narrow"))))
    return seen


async def test_the_tree_panel_is_never_laid_out_for_another_width(make_app):
    async with make_app(size=(160, 40)) as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [(f"q{i}", f"a{i} " * 30) for i in range(6)])
        await app.chat.open(await app.chat.catalog.open(sid))
        tree = app.ui(TreeView)
        tree.focus()
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 12, what="the transcript")
        seen = watch_layouts(app)
        for size in ((80, 24), (160, 40), (80, 24)):
            await pilot.resize_terminal(*size)
            await wait_for(pilot, partial(at_width, app, size[0]), what="the new size")
            await pilot.pause()
        assert seen, "no layout watched"
        assert all((width < NARROW) == narrow for width, narrow in seen), seen
        # the tree kept the focus: at 80 columns it is the open drawer, its cursor row in view
        assert app.has_class("-narrow") and tree.display and tree.has_focus
        top = round(tree.scroll_y)
        assert top <= tree.cursor < top + tree.scrollable_content_region.height


def watch_frames(app, look) -> list[tuple[int, object]]:
    """(screen width, look()) at every frame handed to the driver."""
    seen: list[tuple[int, object]] = []
    on_display(app, lambda screen, update: seen.append((screen.outer_size.width, look())))
    return seen


async def test_the_first_frame_at_a_new_size_shows_the_tree_cursor(make_app):
    async with make_app(size=(160, 44)) as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [(f"q{i}", f"a{i}") for i in range(20)])
        await app.chat.open(await app.chat.catalog.open(sid))
        tree = app.ui(TreeView)
        tree.focus()
        await wait_for(pilot, lambda: tree.cursor_id == ids[-1], what="the cursor on the leaf")
        await pilot.pause()
        assert tree.scrollable_content_region.height > 30 and tree.cursor > 30  # far down the wide panel

        def cursor_shown() -> bool:
            top = round(tree.scroll_y)
            return top <= tree.cursor < top + tree.scrollable_content_region.height

        frames = watch_frames(app, cursor_shown)
        await pilot.resize_terminal(80, 24)  # the drawer: ~18 rows
        await wait_for(pilot, partial(at_width, app, 80), what="the new size")
        await pilot.pause()
        shown = [ok for width, ok in frames if width == 80]
        assert shown and shown[0], frames  # not a frame later, once the tree heard of the resize


async def test_a_resize_paints_the_messages_in_its_own_frame_only(make_app):
    """The layout at the new size tells each widget its size without refreshing it: its frame
    paints all that moved, and nothing asks to be painted again after it."""
    from textual.messages import Update

    repaints: list[object] = []

    def hook(message: object) -> None:
        if isinstance(message, Update) and isinstance(message.widget, (MessageView, MarkdownBody)):
            repaints.append(message.widget)

    async with make_app(size=(160, 44), message_hook=hook) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [(f"q{i}", f"answer {i} " + "word " * 80) for i in range(6)])
        await app.chat.open(await app.chat.catalog.open(sid))
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 12, what="the transcript")
        await pilot.pause()
        bodies = list(app.query(MarkdownBody))
        repaints.clear()
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, partial(at_width, app, 120), what="the new size")
        await pilot.pause()
        await pilot.pause()
        assert all(body.size.width < 120 for body in bodies)  # (laid out at the new width)
        assert not repaints, repaints


async def test_back_at_a_width_seen_before_the_messages_are_drawn_at_it(make_app):
    async with make_app(size=(160, 40)) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [(f"q{i}", f"answer {i} " + "word " * 60) for i in range(4)])
        await app.chat.open(await app.chat.catalog.open(sid))
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 8, what="the transcript")
        transcript = app.ui(Transcript)
        for size in ((140, 40), (100, 30), (140, 40), (100, 30), (160, 40)):
            await pilot.resize_terminal(*size)
            await wait_for(pilot, partial(at_width, app, size[0]), what="the new size")
            await pilot.pause()
            inner = transcript.scrollable_content_region.width
            for view in app.query(MessageView):
                assert view.outer_size.width == inner, (size, view.outer_size, inner)
            for body in app.query(MarkdownBody):  # its height is that of its text at this width
                assert body.size.height == body.get_content_height(transcript.size, app.size, body.size.width)


async def test_a_scrollbar_that_comes_with_a_resize_narrows_the_messages(make_app):
    async with make_app(size=(160, 44)) as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("q1", "a short answer"), ("q2", "another")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 4, what="the transcript")
        transcript = app.ui(Transcript)
        assert not transcript.show_vertical_scrollbar
        wide = app.query(MessageView).first().outer_size.width
        await pilot.resize_terminal(160, 12)  # now the four messages do not fit
        await pilot.pause()
        await wait_for(pilot, lambda: transcript.show_vertical_scrollbar, what="the scrollbar")
        await pilot.pause()
        assert app.query(MessageView).first().outer_size.width == wide - transcript.styles.scrollbar_size_vertical


async def test_keys_typed_while_a_reply_streams_and_every_token_shown_once_they_stop(make_app, fake):
    """While keys come the reply is redrawn after their frames and grows only when they pause
    (issue 26): once they stop, every token that arrived is on screen, and the keys are typed."""
    gate = asyncio.Event()
    tokens = [f"line {i} of the answer.\n\n" for i in range(40)]
    fake.script_openai(tokens, gate=gate, gate_after=36, gap=0.005)
    async with make_app(size=(120, 60)) as (app, pilot):
        composer = app.ui(Composer)
        composer.load_text("write forty lines")
        await pilot.press("enter")
        transcript = app.ui(Transcript)
        await wait_for(pilot, lambda: transcript.streaming is not None, what="the stream")
        await pilot.press(*"while it streams")
        await wait_for(pilot, lambda: "line 33 of the answer." in screen_text(app), what="every token so far")
        assert composer.text == "while it streams"
        gate.set()
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause()
        assert "line 39 of the answer." in screen_text(app)


def frame(app, compositor_class, crop=None, lines=None) -> list[list[tuple[str, object]]]:
    """The screen's chops as `compositor_class` builds them: (text, style) per span, per line."""
    chops = render_chops(app.screen, crop, lines or (lambda y: True), compositor_class)
    return [[(strip.text, tuple(seg.style for seg in strip)) for strip in line.values() if strip is not None]
            for line in chops]


async def test_the_screen_draws_only_what_is_not_covered_and_shows_what_textual_would(make_app):
    """(CoveredCompositor, widgets/textual_internals.py) The same frame as Textual's own compositor, cell
    for cell and style for style, wide and narrow, with the drawer open and in a partial update."""
    from textual.geometry import Region

    Compositor = textual_compositor()
    async with make_app(size=(160, 44)) as (app, pilot):
        assert issubclass(compositor_class(app.screen), CoveredCompositor)
        sid, _ = await seed(app.chat.catalog, [(f"q{i}", f"answer {i} " + "word " * 50) for i in range(8)])
        await app.chat.open(await app.chat.catalog.open(sid))
        await wait_for(pilot, lambda: len(app.query(MessageView)) == 16, what="the transcript")
        app.ui(TreeView).focus()
        for size in ((160, 44), (80, 24), (120, 40)):
            await pilot.resize_terminal(*size)
            await wait_for(pilot, partial(at_width, app, size[0]), what="the new size")
            await pilot.pause()
            assert frame(app, CoveredCompositor) == frame(app, Compositor), size
            crop, rows = Region(5, 3, 60, 6), {4, 6, 7}.__contains__
            assert frame(app, CoveredCompositor, crop, rows) == frame(app, Compositor, crop, rows), size


async def test_a_widget_covered_on_its_left_is_still_drawn_on_its_right():
    from textual.app import App
    from textual.containers import Vertical
    from textual.widgets import Static

    class Covered(CoveredScreen):
        DEFAULT_CSS = """
        #back { background: red; layers: base top; }
        #front { layer: top; dock: left; width: 10; height: 3; background: blue; }
        """

        def compose(self):
            with Vertical(id="back"):
                yield Static("in front", id="front")
                yield Static("behind, to the right " * 3)

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(Covered())

    Compositor = textual_compositor()
    app = Host()
    async with app.run_test(size=(40, 6)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, Covered)
        assert frame(app, CoveredCompositor) == frame(app, Compositor)
        assert "to the right" in "".join(text for line in frame(app, CoveredCompositor) for text, _ in line)
