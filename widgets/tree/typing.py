"""Typing a tree filter after `/`: keys edit the query instead of running tree bindings, and keys
typed while a filter pass over a big tree runs are applied together by the next pass."""

from __future__ import annotations

from collections.abc import Callable

from textual import events


class QueryTyping:
    def __init__(self, current: Callable[[], str], apply: Callable[[str], None],
                 schedule: Callable[[Callable[[], None]], object], changed: Callable[[], None]) -> None:
        self._current, self._apply, self._schedule, self._changed = current, apply, schedule, changed
        self.active = False  # "/" was pressed: printable keys edit the query
        self._pending: str | None = None  # typed, not applied yet

    @property
    def text(self) -> str:
        """The query as typed so far (applied or not)."""
        return self._pending if self._pending is not None else self._current()

    def start(self) -> None:
        self.active = True
        self._changed()

    def stop(self) -> None:
        self.active = False
        self._pending = None

    def key(self, event: events.Key) -> bool:
        """Handle a key while typing; False when not typing (the key is the tree's)."""
        if not self.active:
            return False
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self.stop()
            self._apply("")
        elif event.key == "enter":
            self.flush()
            self.active = False
            self._changed()
        elif event.key == "backspace":
            self._edit(self.text[:-1])
        elif event.is_printable and event.character:
            self._edit(self.text + event.character)
        return True

    def _edit(self, text: str) -> None:
        scheduled = self._pending is not None
        self._pending = text
        self._changed()
        if not scheduled:
            self._schedule(self.flush)

    def flush(self) -> None:
        text, self._pending = self._pending, None
        if text is not None and text != self._current():
            self._apply(text)
