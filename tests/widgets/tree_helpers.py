"""Helpers for the tree panel's tests: what a row looks like on screen, rows with a status."""

from __future__ import annotations

from collections import namedtuple

from rich.segment import Segment

from treechat.storage.base import TreeRow
from treechat.widgets.tree_view import TreeView

from .helpers import row

# The lead adds ``status`` ("error" | "aborted" | None) to TreeRow; until then a look-alike row type
# carries it (the widget reads it with getattr, so both draw the same).
_StatusRow = namedtuple("_StatusRow", TreeRow._fields + ("status",))  # type: ignore[misc]


def status_row(entry_id: str, parent: str | None, status: str | None, **kw: object) -> TreeRow:
    base = row(entry_id, parent, "assistant", **kw)  # type: ignore[arg-type]
    if "status" in TreeRow._fields:
        return base._replace(status=status)  # type: ignore[call-arg]
    return _StatusRow(*base, status)  # type: ignore[return-value]


def segments(tree: TreeView, entry_id: str) -> list[Segment]:
    """The drawn segments of an entry's line (it must be on screen)."""
    at = tree.layout_data.index_of(entry_id)
    assert at is not None, f"{entry_id} has no line"
    y = at - round(tree.scroll_y)
    assert 0 <= y < tree.scrollable_content_region.height, f"{entry_id} is not on screen"
    return list(tree.render_line(y))


def drawn(tree: TreeView, entry_id: str) -> str:
    return "".join(s.text for s in segments(tree, entry_id))


def on_screen(tree: TreeView, entry_id: str) -> bool:
    at = tree.layout_data.index_of(entry_id)
    top = round(tree.scroll_y)
    return at is not None and top <= at < top + tree.scrollable_content_region.height


def shown_ids(tree: TreeView) -> list[str]:
    return [line[0].id for line in tree.lines]
