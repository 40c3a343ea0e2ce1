"""The tooltip of the tree row under the pointer: kind and time at once (the row has them); the
model and tokens once the App answers ``TreeView.DetailsRequested`` with ``set_details``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from treechat.storage.base import TreeRow
from treechat.text.sanitize import sanitize

from .nav import row_summary

HOVER_DELAY = 0.3  # seconds the pointer rests on a row before its details are asked for
DETAILS_KEPT = 512  # answers remembered (hovering back over a row asks nothing)


class RowTooltips:
    def __init__(self, widget: Widget, rows: Callable[[], Mapping[str, TreeRow]], ask: Callable[[str], None]) -> None:
        self.widget, self.rows, self.ask = widget, rows, ask
        self.hovered: str | None = None
        self._timer: Timer | None = None
        self._details: dict[str, str] = {}

    def hover(self, entry_id: str | None) -> None:
        """The pointer is over this row now (None: over no row)."""
        if entry_id == self.hovered:
            return
        self.hovered = entry_id
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.show()
        if entry_id is not None and entry_id not in self._details:
            self._timer = self.widget.set_timer(HOVER_DELAY, self._rested)

    def _rested(self) -> None:
        self._timer = None
        if self.hovered is not None:
            self.ask(self.hovered)

    def set_details(self, entry_id: str, text: str) -> None:
        self._details[entry_id] = sanitize(text).strip()
        if len(self._details) > DETAILS_KEPT:
            self._details.pop(next(iter(self._details)))
        if entry_id == self.hovered:
            self.show()

    def show(self) -> None:
        row = self.rows().get(self.hovered) if self.hovered is not None else None
        if row is None:
            self.widget.tooltip = None
            return
        details = self._details.get(row.id)
        text = row_summary(row) + (f"\n{details}" if details else "")
        self.widget.tooltip = Content(text)  # plain text: never read as markup
