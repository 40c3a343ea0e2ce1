"""Read-only mapping views of a `TreeIndex` in the old shape (a row per id, children ids per parent
id), made entry by entry on demand: for tests and the few callers that want rows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ..base import TreeRow
from .columns import DEAD, ROOT

if TYPE_CHECKING:
    from .index import TreeIndex


def and_not(a: bytes, b: bytes) -> bytes:
    """Bytewise a & ~b of two 0/1 columns (whole-column integer operations)."""
    n = len(a)
    x = int.from_bytes(a, "big") & ~int.from_bytes(b, "big") & int.from_bytes(b"\x01" * n, "big")
    return x.to_bytes(n, "big")


class RowsById(Mapping[str, TreeRow]):
    """`TreeIndex.by_id`: rows by id, in append order, made on demand."""

    def __init__(self, index: TreeIndex) -> None:
        self._index = index

    def __getitem__(self, entry_id: str) -> TreeRow:
        row = self._index.get(entry_id)
        if row is None:
            raise KeyError(entry_id)
        return row

    def __iter__(self) -> Iterator[str]:
        index = self._index
        parents = index.parents
        return (index.id_at(s) for s in range(len(parents)) if parents[s] != DEAD)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._index


class ChildrenById(Mapping[str | None, Sequence[str]]):
    """`TreeIndex.children`: child ids per parent id (None: the roots; a missing parent's id: the
    orphans naming it), in sibling order; only parents that have children are keys."""

    def __init__(self, index: TreeIndex) -> None:
        self._index = index

    def _ids(self, parent_id: str | None) -> list[str]:
        index = self._index
        orphans = index.orphan_parents
        if parent_id is None:
            return [index.id_at(k) for k in index.kids(ROOT) if k not in orphans]
        slot = index.slot(parent_id)
        if slot is None:
            return [index.id_at(k) for k in index.kids(ROOT) if orphans.get(k) == parent_id]
        return [index.id_at(k) for k in index.kids(slot)]

    def __getitem__(self, parent_id: str | None) -> Sequence[str]:
        ids = self._ids(parent_id)
        if not ids:
            raise KeyError(parent_id)
        return ids

    def __iter__(self) -> Iterator[str | None]:
        index = self._index
        keys: list[str | None] = []
        if index.kids(ROOT):
            orphans = index.orphan_parents
            if any(k not in orphans for k in index.kids(ROOT)):
                keys.append(None)
            keys.extend(dict.fromkeys(orphans.values()))
        parents = index.parents
        keys.extend(index.id_at(s) for s in range(len(parents)) if parents[s] != DEAD and index.kids(s))
        return iter(keys)

    def __len__(self) -> int:
        return sum(1 for _ in self)
