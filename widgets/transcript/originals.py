"""The messages a compaction replaced, under its expanded card: one line each, opened one by one.

A compaction can replace ~900 messages. A ``MessageView`` each made a tree toggle take seconds and a
resize leave half-drawn frames for ~10 s (issue 11): every one was laid out again at each width.
Here a run of originals is one ``OriginalLines`` widget (Line API: only the rows on screen are
drawn, and its height is its row count whatever the width). An original that is opened (click, or
Enter on the selection) is a real ``MessageView`` between two runs; the card rebuilds its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import set_cell_size
from rich.segment import Segment
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from treechat.text.sanitize import sanitize_line

from .items import ItemMessage

if TYPE_CHECKING:
    from .items import TranscriptItem


def one_line(message: ItemMessage, limit: int = 300) -> str:
    """``role · first words`` of a message, for its row."""
    if isinstance(message, UserMessage):
        return "you · " + sanitize_line(message_text(message), limit)
    if isinstance(message, AssistantMessage):
        text = " ".join(b.text for b in message.content if isinstance(b, TextContent))
        calls = [b.name for b in message.content if isinstance(b, ToolCall)]
        if not text.strip() and calls:
            text = "⚙ " + ", ".join(calls)
        return "assistant · " + sanitize_line(text, limit)
    if isinstance(message, ToolResultMessage):
        mark = "✖" if message.is_error else "✓"
        return f"{mark} {sanitize_line(message.tool_name, 40)} → " + sanitize_line(message_text(message), limit)
    if isinstance(message, BashExecutionMessage):
        return "$ " + sanitize_line(message.command, limit)
    if isinstance(message, CustomMessage):
        return sanitize_line(message.custom_type, 40) + " · " + sanitize_line(message_text(message), limit)
    return sanitize_line(getattr(message, "role", "message"), 40) + " · " + sanitize_line(message_text(message), limit)


class OriginalLines(Widget):
    """Rows ``first .. first + count`` of a card's originals, one line each."""

    COMPONENT_CLASSES = {"original-lines--selected"}
    DEFAULT_CSS = """
    OriginalLines { height: auto; color: $text-muted; }
    OriginalLines > .original-lines--selected { background: $accent 35%; color: $text; text-style: bold; }
    """

    @dataclass
    class Clicked(Message):
        """A row was clicked."""

        lines: OriginalLines
        """The rows clicked."""

        index: int
        """The row's original, among all of the card's originals."""

    def __init__(self, items: list[TranscriptItem], first: int, count: int, opened: set[int]) -> None:
        super().__init__()
        self.items, self.first, self.count, self.opened = items, first, count, opened
        self.selected: int | None = None  # an index among all originals, when it is one of ours
        self._text: dict[int, str] = {}

    def holds(self, index: int) -> bool:
        return self.first <= index < self.first + self.count

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.count

    def row_text(self, index: int) -> str:
        if index not in self._text:
            self._text[index] = one_line(self.items[index].message)
        return ("▾ " if index in self.opened else "▸ ") + self._text[index]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        index = self.first + y
        if not (self.holds(index) and width):
            return Strip.blank(width, self.rich_style)
        style = self.get_component_rich_style("original-lines--selected") if index == self.selected else self.rich_style
        return Strip([Segment(set_cell_size(self.row_text(index), width), style)], width)

    def select(self, index: int | None) -> None:
        if index != self.selected:
            self.selected = index if index is not None and self.holds(index) else None
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if 0 <= event.y < self.count:
            self.post_message(self.Clicked(self, self.first + event.y))
