"""Shared helpers for widget tests: row builders and a host App that records messages."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widget import Widget

from treechat.storage.base import TreeRow
from treechat.widgets.textual_internals import screen_strips


def row(entry_id: str, parent: str | None, role: str | None = "user", type: str = "message", label: str | None = None, preview: str | None = None) -> TreeRow:
    return TreeRow(entry_id, parent, type, role, preview if preview is not None else f"text {entry_id}", "2024-01-01T00:00:00.000Z", label)


def chain(n: int, prefix: str = "n") -> list[TreeRow]:
    """A single root→leaf chain of n messages alternating user/assistant."""
    return [row(f"{prefix}{i}", f"{prefix}{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant") for i in range(n)]


class Host(App):
    """Composes the given widgets and records every message they post."""

    CSS_PATH = "../../styles.tcss"
    last_key_at = 0.0  # as the App's: when the newest key came (StreamingView yields to typing)

    def __init__(self, *widgets: Widget) -> None:
        super().__init__()
        self._widgets = widgets
        self.seen: list[Message] = []

    def compose(self) -> ComposeResult:
        yield from self._widgets

    def record(self, message: Message) -> None:
        """``run_test(message_hook=app.record)``: a bubbling message is seen once per hop; keep one."""
        if not any(m is message for m in self.seen):
            self.seen.append(message)

    # (a test host is never run for real: its run is run_test, recording; 79 tests call it so)
    def run(self, size: tuple[int, int] = (80, 24)) -> Any:  # type: ignore[override]
        return self.run_test(size=size, message_hook=self.record)

    def posted(self, kind: type) -> list:
        return [m for m in self.seen if isinstance(m, kind)]


def screen_text(app: App) -> str:
    """The characters on the screen now, one line per row (private API, test-only)."""
    strips = screen_strips(app.screen)
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


async def wait_for(pilot, predicate, tries: int = 50) -> bool:
    """Pause until ``predicate()`` holds (a bounded number of idle cycles, never a clock)."""
    for _ in range(tries):
        if predicate():
            return True
        await pilot.pause()
    return predicate()
