
"""What ``TreeLayout`` hands out: its lines as a sequence of tuples made when read, sets of ids over
its slot sets, rows by id; and where a parent cycle is cut (pure functions over the index)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

from treechat.storage.base import TreeRow
from treechat.storage.tree.columns import DEAD, ROOT
from treechat.storage.tree.index import TreeSnapshot

from .rows import Line

if TYPE_CHECKING:
    from .layout import TreeLayout


def cycle_roots(index: TreeSnapshot) -> list[int]:
    """The first slot (in row order) of each part no root reaches: a parent cycle."""
    parents = index.parents
    reached = bytearray(index.size)
    stack = list(index.kids(ROOT))
    out: list[int] = []
    for start in itertools.chain((None,), range(index.size)):
        if start is not None:
            if reached[start] or parents[start] == DEAD:
                continue
            out.append(start)
            stack = [start]
        while stack:
            y = stack.pop()
            if reached[y]:
                continue
            reached[y] = 1
            stack.extend(index.kids(y))
    return out


class Lines(Sequence[Line]):
    """``TreeLayout.lines``: each line's tuple ``(row, gutter, connector, children, folded)``,
    made when it is read."""

    def __init__(self, layout: TreeLayout) -> None:
        self._layout = layout

    def __len__(self) -> int:
        return len(self._layout)

    def __getitem__(self, i: int) -> Line:  # type: ignore[override]
        n = len(self._layout)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._layout.line(i)

    def __iter__(self) -> Iterator[Line]:
        return (self._layout.line(i) for i in range(len(self._layout)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Lines, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class IdSet(Set[str]):
    def __init__(self, index: TreeSnapshot, slots: frozenset[int]) -> None:
        self._index, self._slots = index, slots

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self._index.slot(entry_id) in self._slots

    def __iter__(self) -> Iterator[str]:
        return (self._index.id_at(s) for s in sorted(self._slots))

    def __len__(self) -> int:
        return len(self._slots)


class RowsOf(Mapping[str, TreeRow]):
    def __init__(self, index: TreeSnapshot) -> None:
        self._index = index

    def __getitem__(self, entry_id: str) -> TreeRow:
        slot = self._index.slot(entry_id)
        if slot is None:
            raise KeyError(entry_id)
        return self._index.row_at(slot)

    def get(self, entry_id: object, default: Any = None) -> Any:
        slot = self._index.slot(entry_id) if isinstance(entry_id, str) else None
        return self._index.row_at(slot) if slot is not None else default

    def __iter__(self) -> Iterator[str]:
        parents = self._index.parents
        return (self._index.id_at(s) for s in range(self._index.size) if parents[s] != DEAD)

    def __len__(self) -> int:
        return len(self._index)


class ActivePath:
    """The slots of the path root → leaf that the tree marks (``┃``): the path to the leaf from
    the index (one step more when the leaf moved to a child: the common case), or as given."""

    def __init__(self) -> None:
        self.slots: frozenset[int] = frozenset()
        self._leaf: int | None = None

    def follow(self, index: TreeSnapshot, leaf_id: str | None, ids: Set[str] | None) -> None:
        if ids is not None:
            self.slots, self._leaf = frozenset(s for s in map(index.slot, ids) if s is not None), None
            return
        leaf = index.slot(leaf_id)
        if leaf is not None and self.slots and index.parents[leaf] == self._leaf:
            self.slots = self.slots | {leaf}
        elif leaf != self._leaf or not self.slots:
            self.slots = frozenset(index.path_slots(leaf))
        self._leaf = leaf

    def __contains__(self, slot: object) -> bool:
        return slot in self.slots

    def ids(self, index: TreeSnapshot) -> set[str]:
        return {index.id_at(s) for s in self.slots}
