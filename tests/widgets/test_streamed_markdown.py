"""A streaming reply costs what its new text costs (issue 26): finished blocks are rendered once,
only the block being written is rendered again, and the height runs ahead of the text so that
most updates are repaints, not layouts of the whole screen."""

from __future__ import annotations

from rich.console import RenderableType
from textual import events
from textual.css.scalar import Scalar

from tests.narrow import of
from treechat.storage.model import AssistantMessage, TextContent
from treechat.widgets.transcript.markdown_body import markdown
from treechat.widgets.transcript.streamed_markdown import RESERVE, StreamedMarkdown
from treechat.widgets.transcript.streaming_view import FRAME, TYPING_FRAME, StreamingView

from .helpers import Host, screen_text, wait_for


class Counted:
    """render_block that records what it was asked to render."""

    def __init__(self) -> None:
        self.sources: list[str] = []

    def __call__(self, source: str) -> RenderableType:
        self.sources.append(source)
        return markdown(source)


def paragraphs(n: int) -> str:
    return "".join(f"Paragraph {i} has **some** words in it.\n\n" for i in range(n))


async def test_finished_blocks_are_rendered_once_and_only_the_last_again():
    render = Counted()
    body = StreamedMarkdown(render)
    async with Host(body).run(size=(60, 40)) as pilot:
        await pilot.pause()
        text, whole = "", 0
        for i in range(30):
            for word in [*f"Paragraph {i} has **some** words in it.".split(" "), "\n\n"]:
                text += word if word == "\n\n" else word + " "  # as a reply streams: only appended to
                body.set_text(text)
                whole += len(text)  # what drawing the whole reply each time would render
        text += "and the next one is be"
        body.set_text(text)
        rendered = sum(len(s) for s in render.sources)
        assert rendered < whole / 10, "each update rendered the whole reply again"
        assert "Paragraph 29 has some words in it." in body.text_lines  # bold drawn as bold, not **
        assert render.sources[-1] == "and the next one is be"  # the block being written, alone


async def test_a_blank_line_inside_a_code_fence_does_not_end_a_block():
    render = Counted()
    body = StreamedMarkdown(render)
    async with Host(body).run(size=(60, 40)) as pilot:
        await pilot.pause()
        body.set_text("Intro.\n\n```python\ndef f():\n\n    return 1\n")
        assert render.sources[-1].startswith("```python")  # the fence is one block, still open
        body.set_text("Intro.\n\n```python\ndef f():\n\n    return 1\n```\n\nAfter.")
        assert render.sources[-1] == "After."
        assert any("return 1" in line for line in body.text_lines)


async def test_an_indented_line_after_a_blank_line_stays_in_its_block():
    render = Counted()
    body = StreamedMarkdown(render)
    async with Host(body).run(size=(60, 40)) as pilot:
        await pilot.pause()
        body.set_text("- an item\n\n  more of the item\n")
        assert render.sources[-1] == "- an item\n\n  more of the item\n"


async def test_the_height_runs_ahead_so_most_updates_ask_for_no_layout():
    body = StreamedMarkdown(markdown)
    async with Host(body).run(size=(60, 40)) as pilot:
        await pilot.pause()
        body.set_text("one line")
        assert body.needs_room
        body.grow()
        assert body.styles.height is not None and body.styles.height.value == 1 + RESERVE
        for i in range(RESERVE // 2 - 1):  # each paragraph: its line and a blank one between
            body.set_text(body.source + f"\n\nline {i}")
            assert not body.needs_room  # a repaint of the new lines: no layout asked for
        body.set_text(body.source + "\n\n" + "\n\n".join(f"more {i}" for i in range(RESERVE)))
        assert body.needs_room
        body.grow()
        assert body.styles.height.value == body.line_count + RESERVE


async def test_a_rewritten_text_is_drawn_again_from_the_start():
    body = StreamedMarkdown(markdown)
    async with Host(body).run(size=(60, 40)) as pilot:
        await pilot.pause()
        body.set_text("first version\n\nof the text")
        body.set_text("second")
        assert body.text_lines == ["second"]


async def test_while_keys_come_the_reply_is_repainted_and_grows_once_they_pause():
    view = StreamingView()
    app = Host(view)
    async with app.run(size=(80, 30)) as pilot:
        text = "Start."
        view.update_message(AssistantMessage(content=[TextContent(text=text)], model="m"))
        assert await wait_for(pilot, lambda: "Start." in screen_text(app))
        room = of(Scalar, view.body.styles.height).value
        app.last_key_at = 10**9  # the attribute the view reads off its App: a key "now" for ever: growing waits (up to MAX_HOLD)
        text += "".join(f"\n\nline {i}" for i in range(RESERVE))
        view.update_message(AssistantMessage(content=[TextContent(text=text)], model="m"))
        assert await wait_for(pilot, lambda: view.written == text)
        assert of(Scalar, view.body.styles.height).value == room and view.body.needs_room
        app.last_key_at = 0.0  # no key for a while
        assert await wait_for(pilot, lambda: not view.body.needs_room)
        assert f"line {RESERVE - 1}" in screen_text(app)


async def test_a_resize_draws_the_lines_again_at_the_new_width():
    body = StreamedMarkdown(markdown)
    app = Host(body)
    async with app.run(size=(80, 30)) as pilot:
        await pilot.pause()
        body.set_text("word " * 30)
        body.grow()
        wide = body.line_count
        await pilot.resize_terminal(40, 30)
        assert await wait_for(pilot, lambda: body.line_count > wide)
        assert all(len(line) <= 40 for line in body.text_lines)
        body.post_message(events.Resize(body.size, body.size))  # the same width again: nothing to do
        await pilot.pause()


async def test_while_keys_come_a_redraw_waits_for_the_typing_frame():
    """Typing, the reply is redrawn at most every TYPING_FRAME (not every FRAME): each redraw
    renders the block being written and makes the frame a key waits for heavier (issue 26)."""
    view = StreamingView()
    app = Host(view)
    async with app.run(size=(80, 30)) as pilot:
        view.update_message(AssistantMessage(content=[TextContent(text="Start.")], model="m"))
        assert await wait_for(pilot, lambda: "Start." in screen_text(app))
        app.last_key_at = 10**9  # a key "now", for ever
        view._drawn_at = 10**9  # and a redraw just now, for ever: the next one waits
        view.update_message(AssistantMessage(content=[TextContent(text="Start. And more.")], model="m"))
        for _ in range(5):  # five frames' worth of redraws
            await pilot.pause(FRAME)
        assert view.written == "Start." and "And more." not in screen_text(app)
        app.last_key_at = 0.0  # the keys stopped: drawn at the next frame
        assert await wait_for(pilot, lambda: "And more." in screen_text(app))


async def test_while_keys_come_a_key_draws_what_is_due_right_after_its_frame():
    """Typing, the reply is redrawn after the frame of a key (the App tells `key_typed`), not at
    a time of its own: its frame took the frame slot the next key's frame waited for (issue 26)."""
    view = StreamingView()
    app = Host(view)
    async with app.run(size=(80, 30)) as pilot:
        view.update_message(AssistantMessage(content=[TextContent(text="Start.")], model="m"))
        assert await wait_for(pilot, lambda: "Start." in screen_text(app))
        app.last_key_at = 10**9  # a key "now", for ever: the view's own timer does not draw
        view._drawn_at -= TYPING_FRAME  # the last redraw a typing frame ago: one is due
        view.update_message(AssistantMessage(content=[TextContent(text="Start. And more.")], model="m"))
        await pilot.pause()
        assert view.written == "Start."
        view.key_typed()
        assert await wait_for(pilot, lambda: "And more." in screen_text(app))
        view.key_typed()  # nothing new, and a redraw just now: nothing to do
        assert view.written == "Start. And more."
