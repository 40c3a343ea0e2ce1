"""Where the tree's jump keys land (pure functions over a layout).

- ``fork_above``/``fork_below`` (``{``/``}``): the fork points on the path through the cursor. Up
  means the nearest fork among the cursor's ancestors (where its branch split off); down follows
  the cursor's branch to its next fork — along the active path where the cursor is on it, else
  along the newest child (where a sibling switch would land).
- ``next_match`` (``n``/``N``): the next or previous row matching the query, wrapping around.
"""

from __future__ import annotations

from collections.abc import Set

from .layout import TreeLayout


def fork_above(layout: TreeLayout, entry_id: str | None) -> int | None:
    """The line of the nearest ancestor with several visible children (None at the top)."""
    index = layout.index
    slot = index.slot(entry_id)
    if slot is None:
        return None
    for p in reversed(index.path_slots(slot)[:-1]):
        at = layout.line_of(p)
        if at is not None and layout.children_at(at) >= 2:
            return at
    return None


def fork_below(layout: TreeLayout, start: int, active: Set[int]) -> int | None:
    """The line of the next fork down the cursor's branch (None when the branch ends first)."""
    if not 0 <= start < len(layout):
        return None
    at = start
    seen: set[int] = set()
    while at not in seen:
        seen.add(at)
        count = layout.children_at(at)
        if at != start and count >= 2:
            return at
        if count == 0 or layout.folded_at(at):
            return None
        if count == 1:
            at = layout.span_end(at) if layout.span_end(at) != at else at + 1  # one child: the next line
            continue
        kids = layout.visible_kids(layout.line_slot(at))
        pick = next((k for k in kids if k in active), kids[-1])
        nxt = layout.line_of(pick)
        if nxt is None:
            return None
        at = nxt
    return None


def next_match(layout: TreeLayout, start: int, delta: int) -> int | None:
    """The next (delta 1) or previous (-1) line that matches the query, wrapping; None if none."""
    matches = layout.match_slots
    n = len(layout)
    if not matches or not n:
        return None
    slot_at = layout.line_slot
    for step in range(1, n + 1):
        at = (start + delta * step) % n
        if slot_at(at) in matches:
            return at
    return None
