"""Helpers for the tree panel's tests: what a row looks like on screen, rows with a status."""

from __future__ import annotations

from rich.segment import Segment

from treechat.storage.base import TreeRow
from treechat.widgets.tree.view import TreeView

from .helpers import row


def status_row(entry_id: str, parent: str | None, status: str | None, **kw: object) -> TreeRow:
    """A reply's row with its stop status ("error" | "aborted" | None)."""
    return row(entry_id, parent, "assistant", **kw)._replace(status=status)  # type: ignore[arg-type]


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
