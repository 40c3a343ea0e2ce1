"""A reply's settled text is laid out once per width (widgets/transcript/markdown_body.py): the
height for the layout and the lines for the frame come from one Rich layout, a width seen before
is not laid out again, and what is drawn is what Textual draws for the same Markdown."""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from textual.containers import Vertical
from textual.widgets import Static

from treechat.widgets.transcript.markdown_body import MarkdownBody, markdown

from .helpers import Host

TEXT = "A reply with **bold** words and a list:\n\n- one item that is long enough to wrap at a narrow width\n- two\n\n" \
       "```python\nprint('hi')\n```\n\nAnd a last paragraph, " + "word " * 30


def lines(widget) -> list[str]:
    return [strip.text for strip in widget.render_lines(widget.size.region)]


async def test_a_width_is_laid_out_once_and_drawn_as_textual_draws_the_same_markdown(monkeypatch):
    laid_out: list[object] = []
    layout = RichMarkdown.__rich_console__

    def counted(self, console, options):
        laid_out.append(self)
        return layout(self, console, options)

    monkeypatch.setattr(RichMarkdown, "__rich_console__", counted)
    body = MarkdownBody("A reply with **bold** words and " + "word " * 30)
    same = Static(markdown("A reply with **bold** words and " + "word " * 30))  # Textual's own visual
    box = Vertical(body, same)
    app = Host(box)
    async with app.run(size=(60, 30)) as pilot:
        await pilot.pause()
        for width in (40, 24, 40, 24):
            box.styles.width = width
            await pilot.pause()
            assert body.size.height == same.size.height and lines(body) == lines(same), width
        assert laid_out.count(body.content) == 3  # once at each width: 60 (the first frame), 40, 24
        assert laid_out.count(same.content) > 6  # (Textual's: measured and drawn, at every visit)
        laid_out.clear()
        box.styles.width = 40  # seen before: neither measured nor drawn again by Rich
        await pilot.pause()
        assert body.content not in laid_out and same.content in laid_out
        assert lines(body) == lines(same)


async def test_code_blocks_and_their_copy_lines_are_drawn_at_every_width():
    body = MarkdownBody(TEXT)
    same = Static(body.content)  # the same renderable in Textual's own visual
    box = Vertical(body, same)
    app = Host(box)
    async with app.run(size=(80, 60)) as pilot:
        for width in (70, 30, 70):
            box.styles.width = width
            await pilot.pause()
            assert lines(body) == lines(same), width
            assert any("copy" in line for line in lines(body))
