"""Display lines from a visible-children map (the general pass of ``TreeLayout``: a query, orphans,
cycles). Pure functions over plain data; no recursion (5,000-deep chains)."""

from __future__ import annotations

from collections.abc import Mapping

from treechat.storage.base import TreeRow

from .rows import ELBOW, NONE, TEE, Gutter, Line


def flatten(rows: Mapping[str, TreeRow], children: Mapping[str | None, list[str]], folded: set[str]) -> list[Line]:
    """Pre-order lines: a row is indented only where its parent has several visible children."""
    lines: list[Line] = []
    roots = children.get(None, [])
    stack: list[tuple[str, Gutter | None, int]] = []
    if len(roots) > 1:
        for i in range(len(roots) - 1, -1, -1):
            last = i == len(roots) - 1
            stack.append((roots[i], (not last, None, 1), ELBOW if last else TEE))
    elif roots:
        stack.append((roots[0], None, NONE))
    append, pop, push = lines.append, stack.pop, stack.append
    while stack:
        rid, gutter, connector = pop()
        kids = children.get(rid, ())
        is_folded = rid in folded and bool(kids)
        append((rows[rid], gutter, connector, len(kids), is_folded))
        if is_folded or not kids:
            continue
        if len(kids) == 1:
            # a chain continues at the same indent; the fork line (if any) keeps running
            push((kids[0], gutter, NONE))
            continue
        depth = gutter[2] + 1 if gutter else 1
        last_i = len(kids) - 1
        for i in range(last_i, -1, -1):
            push((kids[i], (i != last_i, gutter, depth), ELBOW if i == last_i else TEE))
    return lines


def children_of(parents: Mapping[str, str | None]) -> dict[str | None, list[str]]:
    """Parent id (None = roots) -> children, in the order of ``parents``."""
    children: dict[str | None, list[str]] = {}
    for rid, pid in parents.items():
        if pid in children:
            children[pid].append(rid)
        else:
            children[pid] = [rid]
    return children


def break_cycles(vparent: dict[str, str | None], children: dict[str | None, list[str]]) -> None:
    """Rows no root reaches are in (or under) a parent cycle: the first of each, in row order,
    becomes a root, so every row has a line (never hidden, never an endless walk)."""
    reached: set[str] = set()

    def reach(start: list[str]) -> None:
        stack = list(start)
        while stack:
            node = stack.pop()
            if node not in reached:
                reached.add(node)
                stack.extend(children.get(node, ()))

    reach(children.get(None, []))
    if len(reached) == len(vparent):
        return
    for rid in list(vparent):
        if rid in reached:
            continue
        children[vparent[rid]].remove(rid)
        vparent[rid] = None
        children.setdefault(None, []).append(rid)
        reach([rid])
