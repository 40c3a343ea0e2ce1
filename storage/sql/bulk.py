"""A bulk load's plan, the same on both SQL backends: a session's entries, given in file order,
placed on branch segments with their depth, context start and path state, by the rules an append
follows (so an imported session reads as if it had been appended entry by entry)."""

from __future__ import annotations

from collections.abc import Sequence

from ..aggregates import EMPTY_STATE, StateTuple, advance_state
from ..views import EntryView

# Per entry: (branch, depth, context start depth, state); branches by their position in the list.
Placed = tuple[int, int, int, StateTuple]


def place(views: Sequence[EntryView]) -> tuple[list[tuple[int | None, int]], list[Placed | None]]:
    """The branch segments of a tree given in file order: (parent branch, fork depth) per branch
    (by position), and per entry (branch, depth, context start depth, state); None for entries on
    or under a parent cycle. The same rules as an append: the first child extends its parent's
    branch, every later one (and every leaf marker) starts a new one."""
    n = len(views)
    index = {v.id: i for i, v in enumerate(views)}
    parent_idx = [index.get(v.parent_id) if v.parent_id is not None and v.parent_id != v.id else None for v in views]
    children: list[list[int]] = [[] for _ in range(n)]
    roots: list[int] = []
    for i, p in enumerate(parent_idx):
        if p is not None:
            children[p].append(i)
        elif views[i].parent_id != views[i].id:
            roots.append(i)
    branches: list[tuple[int | None, int]] = []
    placed: list[Placed | None] = [None] * n
    extended = [False] * n
    stack: list[tuple[int, int | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        i, p = stack.pop()
        v = views[i]
        up = placed[p] if p is not None else None
        pb, pd, pctx, pstate = up if up is not None else (None, 0, 1, EMPTY_STATE)
        state = advance_state(pstate, v)
        if p is not None and pb is not None and not extended[p] and v.type != "leaf":
            extended[p] = True
            branch = pb
        else:
            branch = len(branches)
            branches.append((pb, pd))
        ctx = pctx
        if v.type == "compaction":
            ctx = state[0]
            kept = v.first_kept_entry_id
            if v.retained_tail is not True and isinstance(kept, str):
                j = p
                while j is not None and views[j].id != kept:
                    j = parent_idx[j]
                found = placed[j] if j is not None else None
                ctx = found[1] if found is not None else 1
        placed[i] = (branch, state[0], ctx, state)
        stack.extend((ch, i) for ch in reversed(children[i]))
    return branches, placed
