"""QueueTray: the messages waiting for the agent, above the composer.

Data in: ``set_items(items)`` — ``(kind, text)`` pairs, kind "steer" or "follow_up", in delivery
order, or "send": a message sent before the session was open, going out once it is. The tray hides itself when the list is empty.

Messages out: ``Dropped(index)`` (x / Delete on a row, or a click on its ✕) and ``PullLast()``
(Alt+Up: the App moves the last queued text back into the composer). The tray never changes
its own list; the App hands in the new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from textual import events
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from treechat.text.sanitize import sanitize_line

from ..keymap import bindings_for

MARKS = {"steer": "⚡ steer", "follow_up": "⏭ later", "send": "↑ sending"}
_DROP = " ✕"


class QueueTray(Widget, can_focus=True):
    BINDINGS = bindings_for("queue")

    DEFAULT_CSS = """
    QueueTray { height: auto; max-height: 8; border-top: solid $warning 40%; padding: 0 1; display: none; }
    QueueTray.-has-items { display: block; }
    QueueTray:focus { border-top: solid $warning; }
    """

    cursor: reactive[int] = reactive(0)

    @dataclass
    class Dropped(Message):
        """Drop a queued message (x or Delete on its row, or a click on its ✕)."""

        index: int
        """Its place in the tray, from the top (0: the first to go out)."""

    @dataclass
    class PullLast(Message):
        """Pull the last queued message back into the composer (Alt+↑)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.items: list[tuple[str, str]] = []

    def set_items(self, items: list[tuple[str, str]]) -> None:
        self.items = list(items)
        self.set_class(bool(self.items), "-has-items")
        self.cursor = min(self.cursor, max(len(self.items) - 1, 0))
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.items)

    def render(self) -> Content:
        width = max(self.content_region.width, 20)
        lines = []
        for i, (kind, text) in enumerate(self.items):
            mark = MARKS.get(kind, kind)
            room = width - cell_len(mark) - cell_len(_DROP) - 3
            body = sanitize_line(text, max(room, 5))
            while cell_len(body) > max(room, 5):  # wide characters: trim by cells, not code points
                body = body[:-2] + "…"
            style = "reverse" if self.has_focus and i == self.cursor else ""
            pad = " " * max(width - cell_len(mark) - cell_len(body) - cell_len(_DROP) - 2, 1)
            lines.append(Content.assemble((mark, "bold"), "  ", (body, style), pad, (_DROP, "dim")))
        return Content("\n").join(lines)

    def action_cursor(self, delta: int) -> None:
        if self.items:
            self.cursor = (self.cursor + delta) % len(self.items)

    def action_drop(self) -> None:
        if self.items:
            self.post_message(self.Dropped(self.cursor))

    def action_pull_last(self) -> None:
        self.post_message(self.PullLast())

    def on_click(self, event: events.Click) -> None:
        if 0 <= event.y < len(self.items):
            self.cursor = event.y
            if event.x >= self.content_region.width - len(_DROP) - 1:
                self.post_message(self.Dropped(event.y))

    def watch_cursor(self) -> None:
        self.refresh()
