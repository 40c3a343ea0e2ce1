"""A reply's settled text: Rich Markdown in one ``Static`` (a Textual ``Markdown`` is ~14 widgets per
reply, slow in long transcripts), drawn once per width.

Textual lays the text out twice at a new width (its height for the layout, then its lines for the
frame) and again at every width it goes back to; Rich's Markdown layout is most of a message's
share of a resize. ``WidthLines`` keeps the text's lines at the last few widths it was drawn at, so
a resize lays each message out once, and a width seen before not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._context import active_app
from textual.css.styles import RulesMap
from textual.message import Message
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.theme import Theme
from textual.types import NoActiveAppError
from textual.visual import RenderOptions, RichVisual
from textual.widget import Widget
from textual.widgets import Static

from treechat.text.sanitize import sanitize

from .copy_text import code_blocks, markdown_parts

WIDTHS = 4  # widths whose lines a text keeps (a terminal resized back and forth, a panel opened)


class _Replay:
    """A renderable giving back segments already rendered (Textual's styling wraps it)."""

    def __init__(self, segments: list[Segment]) -> None:
        self.segments = segments

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        return self.segments


class WidthLines(RichVisual):
    """Textual's visual for a Rich renderable, with the renderable's segments kept per width: the
    height and the lines at a width come from one layout of it (Textual's own visual lays it
    out for each, and again at every width it comes back to). The visual lives as long as the
    Static's content: a new content is a new visual."""

    def __init__(self, widget: Widget, renderable: RenderableType) -> None:
        super().__init__(widget, renderable)
        self.renderable = renderable
        self._at: dict[int, list[Segment]] = {}

    def _segments(self, width: int) -> list[Segment]:
        segments = self._at.get(width)
        if segments is None:
            if len(self._at) >= WIDTHS:
                del self._at[next(iter(self._at))]  # the oldest width
            app = active_app.get()
            options = app.console_options.update_width(width).update(highlight=False)  # (as Textual's)
            segments = self._at[width] = list(app.console.render(self._renderable, options))
        return segments

    def get_height(self, rules: RulesMap, width: int) -> int:
        return sum(text.count("\n") for text, _, _ in self._segments(width))

    def render_strips(self, width: int, height: int | None, style: VisualStyle, options: RenderOptions) -> list[Strip]:
        # RichVisual.render_strips, the layout replayed: the widget's styling over the segments
        app = active_app.get()
        renderable = self._widget.post_render(_Replay(self._segments(width)), style.rich_style)
        console_options = app.console_options.update(highlight=False, width=width, height=height)
        segments = app.console.render(renderable, console_options.update_width(width))
        lines = Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=False)
        return [Strip(line) for line in islice(lines, None, height)]


# Pygments styles for code blocks: a dark one on dark themes, a light one on light themes
CODE_THEMES = {True: "monokai", False: "default"}


def markdown(text: str, *, dark: bool = True) -> RichMarkdown:
    return RichMarkdown(sanitize(text), code_theme=CODE_THEMES[dark], hyperlinks=False)


def _dark(widget: Widget) -> bool:
    """Whether the running app's theme is dark (code colours follow it)."""
    try:
        return widget.app.current_theme.dark
    except NoActiveAppError:  # built outside an app (a test): the dark default
        return True


class MarkdownBody(Static):
    """A reply's text: Rich Markdown, with a clickable "⧉ copy" above each top-level code block
    (and after a list or quote for the blocks inside it). Its code blocks follow the theme: drawn
    for the theme in use, drawn again when a theme change flips light and dark (only then)."""

    class CopyCode(Message):
        """The "copy" of code block ``index`` (of ``total`` in this text) was clicked."""

        def __init__(self, code: str, language: str, index: int, total: int) -> None:
            self.code, self.language, self.index, self.total = code, language, index, total
            super().__init__()

    def __init__(self, source: str, *, dark: bool = True, classes: str = "body markdown") -> None:
        self.source, self._dark = source, dark
        self._lines: WidthLines | None = None
        super().__init__(self._renderable(), classes=classes)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def render(self) -> WidthLines:
        # one visual per content (``update`` sets a new one): its lines are laid out per width once
        content = self.content
        if self._lines is None or self._lines.renderable is not content:
            self._lines = WidthLines(self, content)  # type: ignore[arg-type]  # (always Rich: _renderable)
        return self._lines

    def _theme_changed(self, theme: Theme) -> None:
        if theme.dark != self._dark:
            self._dark = theme.dark
            self.update(self._renderable())

    def _renderable(self) -> RenderableType:
        parts = markdown_parts(self.source)
        if not any(part.code is not None or part.nested for part in parts):
            return markdown(self.source, dark=self._dark)
        blocks = code_blocks(self.source)
        pieces: list[RenderableType] = []
        for part in parts:
            if part.code is not None:
                pieces.append(self._copy_line([part.code], blocks))
            elif pieces:
                pieces.append(Text(""))  # the blank line one Markdown puts between blocks
            pieces.append(markdown(part.source, dark=self._dark))
            if part.nested:
                pieces.append(self._copy_line(list(part.nested), blocks))
        return Group(*pieces)

    @staticmethod
    def _copy_line(indices: list[int], blocks: Any) -> Text:
        line = Text(justify="right")
        for n, index in enumerate(indices):
            words = "⧉ copy" + (f" {blocks[index].language}" if blocks[index].language else "")
            if len(indices) > 1:
                words += f" #{index + 1}"
            line.append(("  " if n else "") + words, Style(dim=True, meta={"@click": f"copy_code({index})"}))
        return line

    def action_copy_code(self, index: int) -> None:
        blocks = code_blocks(self.source)
        if 0 <= index < len(blocks):
            block = blocks[index]
            self.post_message(self.CopyCode(block.code, block.language, index, len(blocks)))


