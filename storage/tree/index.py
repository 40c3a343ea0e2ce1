"""The session tree in memory: the one tree model of the front ends, compact at any size.

The controller (`treechat.chat`) owns a `TreeIndex`, adds rows as entries are appended and hands
it to the tree widget, which only reads it (a `TreeSnapshot`). It holds the storage's
`TreeColumns` (columns.py: a column per field, a *slot* per entry in append order) and
derives the little it needs from them: no object per entry. The children of a slot are the one
right after it when that is its child (a chain: nearly every entry), plus the few others that name
it ("heads", kept in a dict). Everything about "the shape of the tree" that the screen needs is
answered here, with one rule for each question:

- **Sibling order**: the children of a parent in timestamp order (arrival order breaks ties and
  orders unparseable stamps): what `‹ n/m ›`, `[`/`]` and the tree's drawing all use.
- **Alternatives** (`siblings`): the conversation children of the same parent — message,
  compaction, branch summary, custom message. Settings and labels are not alternatives.
- **Branches** (`branch_count`): conversation tips, i.e. conversation entries with no conversation
  entry below them. Names, labels, model or thinking changes never make a branch, wherever they
  hang; a linear chat has exactly one branch whatever metadata it carries.

`by_id` and `children` are read-only mapping views in the old shape (a row per id, children ids
per parent id), built entry by entry on demand: for tests and the few callers that want rows.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol

from ..base import TreeRow
from ..model import iso_to_ms
from .columns import DEAD, ROOT, Kind, StrColumn, TreeColumns, columns_from_rows, kind_code, widen

CONVERSATION_TYPES = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def _ms(timestamp: str) -> float:
    ms = iso_to_ms(timestamp)
    return float("-inf") if ms != ms else float(ms)  # NaN (unparseable) sorts first, like Pi's sort


class TreeSnapshot(Protocol):
    """What a reader of the tree may use (the widget gets this view; only the owner adds rows)."""

    @property
    def size(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def kind_table(self) -> Sequence[Kind]: ...
    @property
    def kinds(self) -> array[int]: ...
    @property
    def parents(self) -> array[int]: ...
    @property
    def previews(self) -> StrColumn: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    def __len__(self) -> int: ...
    @property
    def dead_slots(self) -> Sequence[int]: ...
    def slot(self, entry_id: str | None) -> int | None: ...
    def id_at(self, slot: int) -> str: ...
    def label_at(self, slot: int) -> str | None: ...
    def row_at(self, slot: int) -> TreeRow: ...
    def kids(self, slot: int) -> Sequence[int]: ...
    def heads(self) -> Mapping[int, Sequence[int]]: ...
    def runs(self) -> tuple[array[int], array[int]]: ...
    def path_slots(self, slot: int | None) -> list[int]: ...
    def type_at(self, slot: int) -> str: ...
    def kind_at(self, slot: int) -> Kind: ...


class TreeIndex:
    """A session's tree over `TreeColumns` (see the module doc)."""

    __slots__ = ("_c", "_heads", "_dead", "_sorted", "_order", "_recent", "_live", "_version",
                 "_counted", "_tips", "_pattern", "_extra", "_breaks")

    def __init__(self, columns: TreeColumns | None = None) -> None:
        self._c = columns if columns is not None else columns_from_rows([])
        self._sorted: dict[int, list[int]] = {}  # children in sibling order, for slots with several
        self._order: array[int] | None = self._c.by_id  # live slots sorted by id
        self._recent: dict[str, int] = {}  # slots added after _order was made
        self._version = 0  # bumped by every change (readers key caches on it)
        self._counted = False
        self._tips = 0
        self._pattern = b""  # see _count
        self._extra: set[int] = set()
        parents = self._c.parents
        n = len(parents)
        # heads: slots whose parent is not the slot just before them (and markers: dead)
        heads: dict[int, list[int]] = {}
        dead: list[int] = []
        before = itertools.chain((DEAD - 1,), range(n - 1))  # slot 0 has no slot before it
        for j in itertools.compress(range(n), map(operator.ne, parents, before)):
            p = parents[j]
            if p == DEAD:
                dead.append(j)
            else:
                heads.setdefault(p, []).append(j)
        self._heads, self._dead = heads, dead
        self._live = n - len(dead)
        self._breaks: tuple[int, array[int], array[int]] | None = None

    @classmethod
    def build(cls, rows: Iterable[TreeRow]) -> TreeIndex:
        """From bare rows in append order (tests, tools, backends without columns)."""
        return cls(columns_from_rows(rows if isinstance(rows, list) else list(rows)))

    # ------------------------------------------------------------ slots

    @property
    def size(self) -> int:
        """Slots, dead ones included (`len()` counts rows)."""
        return len(self._c.parents)

    @property
    def version(self) -> int:
        return self._version

    @property
    def kind_table(self) -> Sequence[Kind]:
        return self._c.kind_table

    @property
    def kinds(self) -> array[int]:
        return self._c.kinds

    @property
    def parents(self) -> array[int]:
        return self._c.parents

    @property
    def previews(self) -> StrColumn:
        return self._c.previews

    @property
    def labels(self) -> Mapping[str, str]:
        return self._c.labels

    def __len__(self) -> int:
        return self._live

    @property
    def dead_slots(self) -> Sequence[int]:
        """The slots that are no row (leaf markers), in order."""
        return self._dead

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self.slot(entry_id) is not None

    def id_at(self, slot: int) -> str:
        return self._c.ids.get(slot)

    def _id_bytes(self, slot: int) -> bytes:
        ids = self._c.ids
        a, b = ids.span(slot)
        return bytes(ids.buf[a:b])

    def slot(self, entry_id: str | None) -> int | None:
        """The slot of a row (None for an unknown id, a marker or None)."""
        if entry_id is None:
            return None
        found = self._recent.get(entry_id)
        if found is not None:
            return found
        order = self._order
        if order is None:
            parents = self._c.parents
            live = itertools.compress(range(len(parents)), map(DEAD.__ne__, parents))
            order = self._order = array("i", sorted(live, key=self._id_bytes))
            self._recent = {}
        key = entry_id.encode("utf-8", "surrogatepass")
        at = bisect_left(order, key, key=self._id_bytes)
        if at < len(order) and self._id_bytes(order[at]) == key:
            return order[at]
        return None

    def type_at(self, slot: int) -> str:
        return self._c.kind_table[self._c.kinds[slot]][0]

    def kind_at(self, slot: int) -> Kind:
        return self._c.kind_table[self._c.kinds[slot]]

    def is_conversation_at(self, slot: int) -> bool:
        return self.type_at(slot) in CONVERSATION_TYPES

    def label_at(self, slot: int) -> str | None:
        labels = self._c.labels
        return labels.get(self.id_at(slot)) if labels else None

    def row_at(self, slot: int) -> TreeRow:
        c = self._c
        p = c.parents[slot]
        kind = c.kind_table[c.kinds[slot]]
        parent_id = c.ids.get(p) if p >= 0 else c.orphan_parents.get(slot)
        return TreeRow(self.id_at(slot), parent_id, kind[0], kind[1], c.previews.get(slot), c.timestamps.get(slot),
                       self.label_at(slot), kind[2])

    def heads(self) -> Mapping[int, Sequence[int]]:
        """Parent slot (ROOT for the roots) -> its children that are not the slot after it."""
        return self._heads

    def runs(self) -> tuple[array[int], array[int]]:
        """(run starts, chain stops), each sorted. A run is consecutive slots each the parent of
        the next; from any slot the chain of single children goes on to the next stop: a slot with
        other children (a fork), the last slot before a run start or a dead slot, the last slot."""
        found = self._breaks
        if found is None or found[0] != self._version:
            starts = sorted(k for kids in self._heads.values() for k in kids)
            stops = {k for k in self._heads if k >= 0}
            stops.update(s - 1 for s in starts if s > 0)
            stops.update(self._dead)
            stops.update(d - 1 for d in self._dead if d > 0)
            stops.add(len(self._c.parents) - 1)
            found = self._breaks = (self._version, array("i", starts), array("i", sorted(stops)))
        return found[1], found[2]

    def kids(self, slot: int) -> Sequence[int]:
        """The children of a slot (ROOT: the roots) in sibling order."""
        sorted_kids = self._sorted.get(slot)
        if sorted_kids is not None:
            return sorted_kids
        parents = self._c.parents
        nxt = slot + 1
        chain = slot >= 0 and nxt < len(parents) and parents[nxt] == slot
        others = self._heads.get(slot)
        if not others:
            return (nxt,) if chain else ()
        kids = [nxt, *others] if chain else list(others)
        if len(kids) > 1:
            stamps = self._c.timestamps
            kids.sort(key=lambda k: _ms(stamps.get(k)))  # stable: slot order breaks ties
        self._sorted[slot] = kids
        return kids

    def path_slots(self, slot: int | None) -> list[int]:
        """Slots root -> slot, following parents (cycle-safe)."""
        out: list[int] = []
        parents = self._c.parents
        seen: set[int] = set()
        cur = slot if slot is not None else ROOT
        while cur >= 0 and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = parents[cur]
        out.reverse()
        return out

    # ------------------------------------------------------------ by id (the old questions)

    @property
    def by_id(self) -> Mapping[str, TreeRow]:
        return RowsById(self)

    @property
    def children(self) -> Mapping[str | None, Sequence[str]]:
        return ChildrenById(self)

    @property
    def orphan_parents(self) -> Mapping[int, str]:
        """Slot -> the missing parent id a root names (an import keeps such entries)."""
        return self._c.orphan_parents

    def get(self, entry_id: str | None) -> TreeRow | None:
        slot = self.slot(entry_id)
        return self.row_at(slot) if slot is not None else None

    def path_ids(self, leaf_id: str | None) -> list[str]:
        """Ids root → leaf, following parents (cycle-safe)."""
        slot = self.slot(leaf_id)
        return [self.id_at(s) for s in self.path_slots(slot)] if slot is not None else []

    def sibling_slots(self, slot: int) -> list[int]:
        """The alternatives at a slot's point of the tree, in sibling order (itself included)."""
        p = self._c.parents[slot]
        kids = self.kids(p) if p != DEAD else ()
        if p == ROOT:  # orphans are alternatives of the orphans naming the same missing parent
            orphans = self._c.orphan_parents
            kids = [k for k in kids if orphans.get(k) == orphans.get(slot)]
        return [k for k in kids if self.is_conversation_at(k)]

    def siblings(self, entry_id: str) -> list[str]:
        slot = self.slot(entry_id)
        return [self.id_at(s) for s in self.sibling_slots(slot)] if slot is not None else []

    def newest_tip_under(self, entry_id: str) -> str:
        """Follow the newest conversation child down to a tip (where a sibling switch lands);
        settings and labels below the tip are followed too, so the leaf is the newest entry."""
        cur = self.slot(entry_id)
        if cur is None:
            return entry_id
        seen: set[int] = set()
        while cur not in seen:
            seen.add(cur)
            kids = [k for k in self.kids(cur) if self.type_at(k) != "label"]
            if not kids:
                break
            conv = [k for k in kids if self.is_conversation_at(k)]
            cur = (conv or kids)[-1]
        return self.id_at(cur)

    # ------------------------------------------------------------ growing (the owner only)

    def add(self, row: TreeRow) -> None:
        """One new row (appended by this process or noticed from another one)."""
        if row.type == "leaf" or self.slot(row.id) is not None:
            return
        c = self._c
        j = len(c.parents)
        p = self.slot(row.parent_id) if row.parent_id is not None else ROOT
        if p is None:
            p = ROOT
            c.orphan_parents[j] = row.parent_id  # type: ignore[assignment]
        codes = {k: i for i, k in enumerate(c.kind_table)}
        code = kind_code(c.kind_table, codes, (row.type, row.role, row.status))
        c.kinds = widen(c.kinds, code)
        c.kinds.append(code)
        c.parents.append(p)
        c.ids.append(row.id)
        c.timestamps.append(row.timestamp)
        c.previews.append(row.preview)
        if row.label:
            c.labels[row.id] = row.label
        if p != j - 1 or p == ROOT:
            self._heads.setdefault(p, []).append(j)
        self._sorted.pop(p, None)
        self._recent[row.id] = j
        self._live += 1
        self._version += 1
        if self._counted and row.type in CONVERSATION_TYPES:
            self._count_one(j)

    def relabel(self, target_id: str, label: str | None) -> TreeRow | None:
        """A label entry changed `target_id`'s label: its row as it is now."""
        slot = self.slot(target_id)
        if slot is None:
            return None
        if label:
            self._c.labels[target_id] = label
        else:
            self._c.labels.pop(target_id, None)
        self._version += 1
        return self.row_at(slot)

    # ------------------------------------------------------------ branch counting

    def branch_count(self) -> int:
        """Conversation tips (at least 1 once there is any conversation)."""
        if not self._counted:
            self._count()
        return self._tips

    def _conv_mask(self) -> bytes:
        """1 per conversation slot, 0 otherwise (dead slots: 0)."""
        table = bytes(1 if k[0] in CONVERSATION_TYPES and k[0] != "leaf" else 0 for k in self._c.kind_table)
        mask = bytearray(map(table.__getitem__, self._c.kinds))
        parents = self._c.parents
        for j in itertools.compress(range(len(parents)), map(DEAD.__eq__, parents)):
            mask[j] = 0
        return bytes(mask)

    def _nearest_conv(self, p: int, conv: bytes, cache: dict[int, int]) -> int:
        """The nearest conversation slot at or above p (ROOT if none); memoised, cycle-safe."""
        parents, chain = self._c.parents, []
        found = ROOT
        seen: set[int] = set()
        while p >= 0 and p not in seen:
            if p < len(conv) and conv[p] or p >= len(conv) and self.is_conversation_at(p):
                found = p
                break
            hit = cache.get(p)
            if hit is not None:
                found = hit
                break
            seen.add(p)
            chain.append(p)
            p = parents[p]
        for hidden in chain:
            cache[hidden] = found
        return found

    def _has_conv_child(self, m: int) -> bool:
        pattern = self._pattern
        return m in self._extra or (m + 1 < len(pattern) and pattern[m + 1] == 1)

    def _count(self) -> None:
        """Tips = conversation slots minus those with a conversation slot below them. The common
        case, a conversation slot right under the previous one, is counted with whole-column
        operations (`_pattern`); the rest walk up to their nearest conversation ancestor."""
        parents = self._c.parents
        n = len(parents)
        conv = self._conv_mask()
        chain = bytes(map(operator.eq, parents[1:], range(n - 1)))
        if n > 1:
            bits = (int.from_bytes(conv[1:], "big") & int.from_bytes(conv[:-1], "big")
                    & int.from_bytes(chain, "big"))
            pattern = b"\x00" + bits.to_bytes(n - 1, "big")
        else:
            pattern = bytes(n)
        self._pattern = pattern
        extra: set[int] = set()
        cache: dict[int, int] = {}
        exceptions = and_not(conv, pattern)
        at = exceptions.find(1)
        while at >= 0:
            m = self._nearest_conv(parents[at], conv, cache)
            if m >= 0 and not (m + 1 < n and pattern[m + 1]):
                extra.add(m)
            at = exceptions.find(1, at + 1)
        self._extra = extra
        total = conv.count(1)
        self._tips = total - pattern.count(1) - len(extra)
        self._counted = True

    def _count_one(self, slot: int) -> None:
        self._tips += 1
        parents = self._c.parents
        m = self._nearest_conv(parents[slot], b"", {})
        if m >= 0 and not self._has_conv_child(m):
            self._extra.add(m)
            self._tips -= 1


# ------------------------------------------------------------ the old shapes, made on demand


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
