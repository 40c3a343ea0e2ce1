"""The tooltip of the tree row under the pointer: kind and time at once (the row has them), and
whether a run goes from it; the model and tokens once the App answers ``TreeView.DetailsRequested``
with ``set_details``."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from datetime import datetime

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from treechat.storage.base import TreeRow
from treechat.text.sanitize import sanitize, sanitize_line

from .drawing import is_subagent_row
from .filter import row_kind

HOVER_DELAY = 0.3  # seconds the pointer rests on a row before its details are asked for
DETAILS_KEPT = 512  # answers remembered (hovering back over a row asks nothing)


class RowTooltips:
    def __init__(self, widget: Widget, rows: Callable[[], Mapping[str, TreeRow]], ask: Callable[[str], None],
                 running: Callable[[], Container[str]] = lambda: ()) -> None:
        self.widget, self.rows, self.ask, self.running = widget, rows, ask, running
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
        text = row_summary(row, running=row.id in self.running()) + (f"\n{details}" if details else "")
        self.widget.tooltip = Content(text)  # plain text: never read as markup


_KIND_NAMES = {"user": "user message", "assistant": "assistant reply", "tool": "tool result",
               "summary": "summary", "settings": "setting", "other": "entry"}
_TYPE_NAMES = {"compaction": "compaction", "branch_summary": "branch summary", "model_change": "model change",
               "thinking_level_change": "thinking level", "active_tools_change": "tools change",
               "session_info": "session name", "custom_message": "extension message", "custom": "extension data"}


def local_time(timestamp: str) -> str:
    """An entry's ISO time as the local wall clock (the text as stored if it does not parse)."""
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return sanitize_line(timestamp, 40)
    if when.tzinfo is not None:
        when = when.astimezone()
    return when.strftime("%Y-%m-%d %H:%M:%S")


def row_summary(row: TreeRow, *, running: bool = False) -> str:
    """The first line of a row's tooltip, known without reading the entry: kind, time, status,
    whether a run goes from it (it carries the running marker)."""
    kind = "sub-agent's result (Enter or o opens its session)" if is_subagent_row(row) else (
        _TYPE_NAMES.get(row.type) or _KIND_NAMES[row_kind(row)])
    parts = [kind, local_time(row.timestamp)]
    if running:
        parts.append("running")
    status = getattr(row, "status", None)
    if status in ("error", "aborted"):
        parts.append(status)
    if row.label:
        parts.append(f"label: {sanitize_line(row.label, 40)}")
    return " · ".join(parts)
