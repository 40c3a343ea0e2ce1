"""StreamedMarkdown: a reply's text while it streams, drawn at a cost that follows the new text.

Data in: ``set_text(text)`` — the (sanitized) text so far, drawn within the height the widget
has; ``needs_room`` says that lines wait below it and ``grow()`` makes room (a layout: the
caller decides when, see ``StreamingView``). ``render_block(source)`` (given at creation) turns
markdown into a Rich renderable, the settled message's own look. Posts nothing.

The text is cut into blocks at blank lines outside code fences: a finished block (the next block
has begun) is rendered once and its lines are kept; only the block still being written is
rendered again on each update, so a redraw late in a long reply costs what the last block costs,
not what the reply does. The widget's height runs ``RESERVE`` lines ahead of its lines: an update
that fits is a repaint of this widget alone, and only one that needs more room asks for a layout
(a layout is of the whole screen: with a long transcript mounted, 25-80 ms, the frames that made
keys wait while a reply streamed).

Cutting at blank lines is how `MarkdownBody` already draws a reply (its pieces, a blank line
between): a block boundary is a blank line followed by a line that starts in the first column
(not a list item's indented continuation), outside a ``` or ~~~ fence.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from textual import events
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

RESERVE = 12  # lines of height kept ahead of the text


class StreamedMarkdown(Widget):
    DEFAULT_CSS = """
    StreamedMarkdown { height: 0; }
    """

    def __init__(self, render_block: Callable[[str], RenderableType], *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.render_block = render_block
        self.source = ""
        # scanning for block boundaries (each character is looked at once)
        self._scanned = 0  # text[:_scanned] is whole lines already looked at
        self._fence: tuple[str, int] | None = None  # the open fence's character and length
        self._after_blank: int | None = None  # where a block would start after the blank line seen
        self._boundary = 0  # text[:_boundary] is finished blocks
        # what is drawn
        self._done_upto = 0  # text[:_done_upto] is rendered into _done
        self._done: list[Strip] = []
        self._tail: list[Strip] = []
        self._width = 0
        self._reserved = 0

    # ------------------------------------------------------------ data in

    def set_text(self, text: str) -> None:
        if text == self.source:
            return
        if not text.startswith(self.source):  # rewritten (not appended): everything again
            self._reset()
        self.source = text
        self._scan()
        if self._width:
            self._render_new()

    @property
    def needs_room(self) -> bool:
        """Lines wait below the height the widget has (or it has room for lines no longer there)."""
        lines = self.line_count
        return lines > self._reserved or (not lines and self._reserved > 0)

    def grow(self) -> None:
        """Room for every line and RESERVE more: the one update that asks for a layout."""
        if self.needs_room:
            lines = self.line_count
            self._reserved = lines + RESERVE if lines else 0
            self.styles.height = self._reserved
    @property
    def line_count(self) -> int:
        return len(self._done) + len(self._tail)

    @property
    def text_lines(self) -> list[str]:
        """What is drawn, as plain text (tests)."""
        return [strip.text.rstrip() for strip in self._done + self._tail]

    def _reset(self) -> None:
        self.source, self._scanned, self._fence, self._after_blank, self._boundary = "", 0, None, None, 0
        self._done_upto, self._done, self._tail = 0, [], []

    # ------------------------------------------------------------ block boundaries

    def _scan(self) -> None:
        text, pos = self.source, self._scanned
        while (end := text.find("\n", pos)) >= 0:
            self._line(text[pos:end], pos)
            pos = end + 1
        self._scanned = pos
        # the line being written: its first character is already final (text is only appended)
        if self._after_blank is not None and self._fence is None and text[pos : pos + 1] not in ("", " ", "\t"):
            self._boundary = self._after_blank

    def _line(self, line: str, start: int) -> None:
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if self._fence is not None:
            char, length = self._fence
            run = len(stripped) - len(stripped.lstrip(char))
            if indent < 4 and run >= length and not stripped[run:].strip():
                self._fence = None
            return
        if not line.strip():
            self._after_blank = start + len(line) + 1
            return
        if self._after_blank is not None and indent == 0 and not line.startswith("\t"):
            self._boundary = self._after_blank
        self._after_blank = None
        if indent < 4 and stripped[:3] in ("```", "~~~"):
            char = stripped[0]
            self._fence = (char, len(stripped) - len(stripped.lstrip(char)))

    # ------------------------------------------------------------ drawing

    def _strips(self, source: str) -> list[Strip]:
        if not source.strip():
            return []
        visual = visualize(self, self.render_block(source), markup=False)
        return Visual.to_strips(self, visual, self._width, None, self.visual_style, pad=True)

    def _render_new(self) -> None:
        before, unchanged = self.line_count, len(self._done)
        if self._boundary > self._done_upto:  # blocks finished since: rendered once, kept
            chunk = self._strips(self.source[self._done_upto : self._boundary])
            if chunk:
                self._done += ([self._blank()] if self._done else []) + chunk
            self._done_upto = self._boundary
        tail = self._strips(self.source[self._done_upto :])
        self._tail = ([self._blank()] if self._done and tail else []) + tail
        # only the lines after the kept ones are drawn again (and those the text no longer reaches)
        self.refresh(Region(0, unchanged, self._width, max(before, self.line_count) - unchanged))

    def _blank(self) -> Strip:
        return Strip.blank(self._width, self.visual_style.rich_style)

    def on_resize(self, event: events.Resize) -> None:
        width = self.size.width
        if width and width != self._width:
            self._width = width
            self._done_upto, self._done, self._tail = 0, [], []
            self._render_new()
            self.grow()  # (a resize is a layout already)

    def render_line(self, y: int) -> Strip:
        lines = self._done if y < len(self._done) else self._tail
        index = y if y < len(self._done) else y - len(self._done)
        if 0 <= index < len(lines):
            return lines[index]
        return Strip.blank(self.size.width, self.visual_style.rich_style)
