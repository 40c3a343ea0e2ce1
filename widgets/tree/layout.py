"""Flattening a session tree into display lines (pure data; ``TreeView`` draws it).

Rules (Pi's /tree): a row is indented only where its parent has several visible children —
single-child chains continue at the same indent. Rows hidden by the filter are skipped and their
children attach to the nearest visible ancestor, so nothing is orphaned; the first row of a parent
cycle becomes a root.

Nothing here is made per row of the tree. The lines are one array of slots (``_slots``: line →
slot of the controller's ``TreeIndex``) cut into *spans*: runs of lines that share a gutter, each
line the only visible child of the line before it. A span knows its gutter, the connector of its
first line and the child count of its last; ``lines[i]`` builds the tuple of one line when it is
drawn. Chains (nearly every entry) are laid out a whole stretch at a time: between two of the
index's chain stops every slot's one child is the next slot, so the visible ones are taken from the
filter's mask in one step. A 1M-entry tree flattens in a fraction of a second.

The gutter of a line is a persistent linked list ``(continues, outer, depth)``: a fork child adds
one level in O(1), whatever the depth; the renderer walks only the levels it can show.

What the layout hands out is made when read: its lines as tuples (``Lines``), sets of ids over its
slot sets (``IdSet``), rows by id (``RowsOf``); ``ActivePath`` is the path root → leaf it marks.
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence, Set
from typing import Final, TypeVar, overload

from treechat.storage.base import TreeRow
from treechat.storage.gc_policy import paused
from treechat.storage.tree.columns import DEAD, ROOT
from treechat.storage.tree.index import CONVERSATION_TYPES, TreeIndex, TreeSnapshot
from treechat.text.expanded import skill_line
from treechat.text.sanitize import sanitize_line

from .filter import mode_mask, narrow, query_words, shows

T = TypeVar("T")

# Connector of a line: the first line of a fork child gets ├─ or └─; others continue the gutter.
NONE, TEE, ELBOW = 0, 1, 2

# The gutter of a line: (continues, outer, depth), a persistent linked list (a fork child adds a level).
Gutter = tuple[bool, "Gutter | None", int]

# A display line is a plain tuple (a NamedTuple costs ~30% of a 100k rebuild):
# (row, gutter, connector, child_count, folded) — child_count is the number of visible children.
Line = tuple[TreeRow, Gutter | None, int, int, bool]
ROW: Final = 0
GUTTER: Final = 1
CONNECTOR: Final = 2
CHILDREN: Final = 3
FOLDED: Final = 4

Span = tuple[Gutter | None, int, int, bool]  # (gutter, connector of the first line, children of the last, last folded)


class TreeLayout:
    """The flattened, filtered, folded display lines of one session's tree.

    The tree is the controller's ``TreeIndex`` (a ``TreeSnapshot``), read and never changed here:
    the index is the one tree model, with the one sibling order."""

    def __init__(self) -> None:
        self.index: TreeSnapshot = TreeIndex()
        self.mode = "default"
        self.query = ""
        self.folded: set[str] = set()
        self.generation = 0  # bumped whenever the lines change (caches key on it)
        self.retired: list[object] = []  # the lines of trees replaced, freed after the next frame
        self._mask = bytearray()  # per slot: 1 if the filter (and query) shows it
        self._slots = array("i")  # line -> slot
        self._span_at = array("i")  # the first line of each span
        self._spans: list[Span] = []
        self._line_of: array[int] | None = None  # slot -> line (-1: none), made on the 9th lookup
        self._lookups = 0
        self._match_slots: frozenset[int] = frozenset()
        self._context_slots: frozenset[int] = frozenset()
        self._hidden_under: dict[int, int] = {}
        self._stops = array("i")  # the index's chain stops, plus the folded slots
        self._stops_version = -1
        self._fold_slots: set[int] = set()
        self._extra_roots: list[int] = []  # the first row of each parent cycle
        self._cut: frozenset[int] = frozenset()

    # ------------------------------------------------------------ building

    def set_index(self, index: TreeSnapshot) -> None:
        """A (new) tree. The previous lines go to ``retired`` (the caller frees them after the
        next frame)."""
        self.retired.append((self._slots, self._span_at, self._spans, self._line_of, self._mask))
        self.index = index
        self._extra_roots, self._cut = [], frozenset()
        self.rebuild()

    @property
    def rows(self) -> Mapping[str, TreeRow]:
        return RowsOf(self.index)

    @property
    def lines(self) -> Lines:
        return Lines(self)

    def rebuild(self) -> None:
        with paused():
            self._rebuild()

    def _rebuild(self) -> None:
        index = self.index
        self.generation += 1
        self._line_of, self._lookups = None, 0
        self._hidden_under = {}
        self._fold_slots = {s for s in map(index.slot, self.folded) if s is not None}
        self._mask = self._mode_mask()
        self._match_slots = self._context_slots = frozenset()
        words = query_words(self.query)
        if words:
            # only the matches (and the fork points where they meet) are visible; the usual pass
            # puts each under its nearest visible ancestor (filter.py)
            found = narrow(index, words, self._mask)
            self._match_slots, self._context_slots = found
            keep = bytearray(len(self._mask))
            mask = self._mask
            for s in itertools.chain(found[0], found[1]):
                keep[s] = mask[s]
            self._mask = keep
        self._refresh_stops()
        reached = self._flatten(self._roots())
        if reached != index.size and not self._extra_roots:  # a parent cycle: no root reaches it
            self._extra_roots = cycle_roots(self.index)
            self._cut = frozenset(self._extra_roots)
            self._refresh_stops()
            self._flatten(self._roots())

    def _mode_mask(self) -> bytearray:
        return mode_mask(self.index, self.mode)

    def _shows(self, slot: int) -> int:
        return shows(self.index, self.mode, slot)

    def _kids(self, slot: int) -> Sequence[int]:
        kids = self.index.kids(slot)
        if self._extra_roots and kids:
            cut = self._cut
            return [k for k in kids if k not in cut]
        return kids

    def _roots(self) -> list[int]:
        roots = self._expand(self.index.kids(ROOT))
        if self._extra_roots:
            roots += self._expand(self._extra_roots)
        return roots

    def _next_stop(self, slot: int) -> int:
        if self._stops_version != self.index.version:
            self._refresh_stops()
        stops = self._stops
        return stops[bisect_left(stops, slot)]

    def _refresh_stops(self) -> None:
        _, stops = self.index.runs()
        extra = set(self._fold_slots)
        for r in self._extra_roots:  # a cycle cut before its first row: no chain runs into it
            extra.update((r - 1, r) if r else (r,))
        self._stops = array("i", sorted(set(stops) | extra)) if extra else stops
        self._stops_version = self.index.version

    def _expand(self, kids: Sequence[int], walked: list[int] | None = None) -> list[int]:
        """The visible slots among ``kids``, a hidden one replaced by its own visible descendants
        (in row order when any was replaced). Along a chain the first visible slot is found in
        the mask at once; `walked` counts the hidden slots passed."""
        mask = self._mask
        out: list[int] = []
        spliced = False
        stack = list(reversed(kids))
        while stack:
            k = stack.pop()
            if mask[k]:
                out.append(k)
                continue
            spliced = True
            stop = self._next_stop(k)
            v = mask.find(1, k, stop + 1)
            if walked is not None:
                walked[0] += (v - k) if v >= 0 else (stop - k + 1)
            if v >= 0:
                out.append(v)
            else:
                stack.extend(reversed(self._kids(stop)))
        if spliced and len(out) > 1:
            out.sort()
        return out

    def _flatten(self, roots: list[int]) -> int:
        """Lay out the lines from the roots; returns the slots accounted for (lines, hidden slots
        walked, slots under folds, dead slots): all of them unless a cycle hid some."""
        index, mask, folded = self.index, self._mask, self._fold_slots
        slots = array("i")
        span_at = array("i")
        spans: list[Span] = []
        walked = [0]
        dead = index.size - len(index)
        stack: list[tuple[int, Gutter | None, int]] = []
        if len(roots) > 1:
            for i in range(len(roots) - 1, -1, -1):
                last = i == len(roots) - 1
                stack.append((roots[i], (not last, None, 1), ELBOW if last else TEE))
        elif roots:
            stack.append((roots[0], None, NONE))
        while stack:
            cur, gutter, connector = stack.pop()
            span_at.append(len(slots))
            slots.append(cur)
            while True:
                if cur in folded:
                    kids = self._expand(self._kids(cur))
                    spans.append((gutter, connector, len(kids), bool(kids)))
                    walked[0] += self._subtree(cur) - 1
                    break
                stop = self._next_stop(cur)
                if stop > cur:  # a chain: each slot's one child is the next slot
                    shown = mask[cur + 1 : stop + 1]
                    count = shown.count(1)
                    walked[0] += stop - cur - count  # the hidden ones
                    if count:
                        slots.extend(itertools.compress(range(cur + 1, stop + 1), shown))
                        cur = slots[-1]
                        if cur in folded:
                            continue
                kids = self._expand(self._kids(stop), walked)
                if len(kids) == 1:
                    cur = kids[0]
                    slots.append(cur)
                    continue
                spans.append((gutter, connector, len(kids), False))
                if kids:
                    depth = gutter[2] + 1 if gutter else 1
                    last_i = len(kids) - 1
                    for i in range(last_i, -1, -1):
                        stack.append((kids[i], (i != last_i, gutter, depth), ELBOW if i == last_i else TEE))
                break
        self._slots, self._span_at, self._spans = slots, span_at, spans
        return len(slots) + walked[0] + dead

    def _subtree(self, slot: int) -> int:
        """Slots at and under `slot` (a chain stretch at a time)."""
        n, stack = 0, [slot]
        seen: set[int] = set()
        while stack:
            y = stack.pop()
            if y in seen:
                continue
            seen.add(y)
            stop = self._next_stop(y)
            n += stop - y + 1
            stack.extend(self._kids(stop))
        return n

    # ------------------------------------------------------------ live growth

    def add_row(self, row: TreeRow) -> bool:
        """A row the index gained (added there first). Returns True when the lines changed only
        by an insert (no rebuild needed).

        The fast path covers the common live case — a new child of a row that had no visible
        children (the conversation growing at the leaf); anything else rebuilds.
        """
        index = self.index
        slot = index.slot(row.id)
        if slot is None:
            return True
        self._hidden_under = {}
        mask = self._mask
        if len(mask) < index.size:
            mask.extend(bytes(index.size - len(mask)))
        if query_words(self.query) or self._extra_roots:
            self.rebuild()
            return False
        mask[slot] = shown = self._shows(slot)
        if not shown:
            return True
        parent = self._visible_parent(slot)
        at = self.line_of(parent) if parent is not None else None
        if at is None or self.children_at(at) or parent in self._fold_slots:
            self.rebuild()
            return False
        span = bisect_right(self._span_at, at) - 1
        self._slots.insert(at + 1, slot)
        for k in range(span + 1, len(self._span_at)):
            self._span_at[k] += 1
        self._line_of = None
        self._lookups = 0
        self.generation += 1
        return True

    def replace_row(self, row: TreeRow) -> int | None:
        """The index replaced a row (a new label): its line. Returns the line."""
        return self.index_of(row.id)

    # ------------------------------------------------------------ lines

    def line_slot(self, line: int) -> int:
        return self._slots[line]

    def _span(self, line: int) -> tuple[int, Span, bool, bool]:
        k = bisect_right(self._span_at, line) - 1
        first = self._span_at[k] == line
        last = (self._span_at[k + 1] if k + 1 < len(self._span_at) else len(self._slots)) - 1 == line
        return k, self._spans[k], first, last

    def line(self, i: int) -> Line:
        _, (gutter, connector, children, folded), first, last = self._span(i)
        row = self.index.row_at(self._slots[i])
        return (row, gutter, connector if first else NONE, children if last else 1, folded and last)

    def children_at(self, line: int) -> int:
        """Visible children of a line's row."""
        _, span, _, last = self._span(line)
        return span[2] if last else 1

    def folded_at(self, line: int) -> bool:
        _, span, _, last = self._span(line)
        return span[3] and last

    def span_end(self, line: int) -> int:
        """The last line of the line's span (the next line with other than one visible child)."""
        k = bisect_right(self._span_at, line) - 1
        return (self._span_at[k + 1] if k + 1 < len(self._span_at) else len(self._slots)) - 1

    def __len__(self) -> int:
        return len(self._slots)

    # ------------------------------------------------------------ counts (for the drawing)

    @property
    def total(self) -> int:
        """Rows a filter could show (every row: leaf markers are no rows)."""
        return len(self.index)

    def hidden_under(self, entry_id: str | int) -> int:
        """Rows the filter (and query) would show below a folded row (what unfolding brings back)."""
        slot = entry_id if isinstance(entry_id, int) else self.index.slot(entry_id)
        if slot is None:
            return 0
        count = self._hidden_under.get(slot)
        if count is None:
            mask, count = self._mask, 0
            stack = list(self._kids(slot))
            seen: set[int] = set()
            while stack:
                y = stack.pop()
                if y in seen:
                    continue
                seen.add(y)
                stop = self._next_stop(y)
                count += mask.count(1, y, stop + 1)
                stack.extend(self._kids(stop))
            self._hidden_under[slot] = count
        return count

    def hidden_alternatives(self, row: TreeRow | int) -> int:
        """Alternatives of a row (other replies or prompts at the same point) that have no line:
        what the filter or the query hides there. Without a filter that hides conversation rows
        nothing can be hidden, and nothing is looked up."""
        if self.mode in ("default", "all") and not self._match_slots and not self._context_slots:
            return 0
        index = self.index
        slot = row if isinstance(row, int) else index.slot(row.id)
        if slot is None:
            return 0
        p = index.parents[slot]
        kids = index.kids(p) if p != DEAD else ()
        if len(kids) < 2:
            return 0
        return sum(1 for k in kids if k != slot and index.kind_at(k)[0] in CONVERSATION_TYPES
                   and self.line_of(k) is None)

    # ------------------------------------------------------------ lookups

    def line_of(self, slot: int | None) -> int | None:
        if slot is None:
            return None
        if self._line_of is None:
            # the first few lookups after a rebuild (cursor, leaf) scan the lines instead of
            # indexing every one before the first frame; many lookups build the index
            self._lookups += 1
            if self._lookups <= 8:
                try:
                    return self._slots.index(slot)
                except ValueError:
                    return None
            line_of = array("i", [-1]) * self.index.size
            slots = self._slots
            any(map(line_of.__setitem__, slots, range(len(slots))))
            self._line_of = line_of
        if slot >= len(self._line_of):
            return None
        at = self._line_of[slot]
        return at if at >= 0 else None

    def index_of(self, entry_id: str | None) -> int | None:
        return self.line_of(self.index.slot(entry_id))

    def _visible_parent(self, slot: int) -> int | None:
        """The nearest visible ancestor of a slot (a run of the chain at a time)."""
        index, mask = self.index, self._mask
        parents = index.parents
        if self._cut:  # a parent cycle was cut: walk up a row at a time, stopping at a cut
            seen: set[int] = set()
            cur = slot
            while cur not in self._cut and cur not in seen:
                seen.add(cur)
                cur = parents[cur]
                if cur < 0:
                    return None
                if mask[cur]:
                    return cur
            return None
        starts, _ = index.runs()
        cur = slot
        while True:
            k = bisect_right(starts, cur) - 1
            start = starts[k] if k >= 0 else 0
            if cur > start:
                v = mask.rfind(1, start, cur)
                if v >= 0:
                    return v
            cur = parents[start]
            if cur < 0:
                return None
            if mask[cur]:
                return cur

    def visible_parent(self, entry_id: str | None) -> str | None:
        """The nearest shown-by-the-filter ancestor of a visible entry (None for roots and for
        entries the filter hides)."""
        slot = self.index.slot(entry_id)
        if slot is None or not self._mask[slot]:
            return None
        parent = self._visible_parent(slot)
        return self.index.id_at(parent) if parent is not None else None

    def visible_kids(self, slot: int) -> list[int]:
        return self._expand(self.index.kids(slot))

    def visible_children(self, parent_id: str | None) -> list[str]:
        slot = ROOT if parent_id is None else self.index.slot(parent_id)
        if slot is None:
            return []
        kids = self._roots() if slot == ROOT else self.visible_kids(slot)
        return [self.index.id_at(k) for k in kids]

    def shown_ancestor(self, entry_id: str | None) -> str | None:
        """The entry itself if it has a line, else its nearest ancestor that has one."""
        slot = self.shown_ancestor_slot(self.index.slot(entry_id))
        return self.index.id_at(slot) if slot is not None else None

    def shown_ancestor_slot(self, slot: int | None) -> int | None:
        seen: set[int] = set()
        while slot is not None and slot >= 0 and slot not in seen:
            if self.line_of(slot) is not None:
                return slot
            seen.add(slot)
            slot = self._visible_parent(slot)
        return None

    def siblings(self, entry_id: str) -> list[str]:
        slot = self.index.slot(entry_id)
        if slot is None or slot >= len(self._mask) or not self._mask[slot]:
            return self.visible_children(None)  # a hidden row's siblings: the roots
        parent = self._visible_parent(slot)
        return self.visible_children(self.index.id_at(parent) if parent is not None else None)

    def unfold_to(self, entry_id: str) -> bool:
        """Unfold every folded ancestor of an entry; True if anything changed (then rebuild)."""
        if not self.folded:
            return False
        index = self.index
        slot = index.slot(entry_id)
        if slot is None:
            return False
        ancestors = set(index.path_slots(slot)[:-1])
        gone = {f for f in self.folded if index.slot(f) in ancestors}
        self.folded -= gone
        return bool(gone)

    @property
    def matches(self) -> Set[str]:
        """With a query: the rows that match it."""
        return IdSet(self.index, self._match_slots)

    @property
    def context(self) -> Set[str]:
        """With a query: the fork points kept for the drawing."""
        return IdSet(self.index, self._context_slots)

    @property
    def match_slots(self) -> frozenset[int]:
        return self._match_slots

    @property
    def context_slots(self) -> frozenset[int]:
        return self._context_slots

    def preview(self, row: TreeRow, limit: int = 200) -> str:
        # a skill's message starts with its instructions' block: the row names the command instead
        shown = skill_line(row.preview) if row.preview.startswith("<skill ") else None
        return sanitize_line(shown or row.preview, limit)

    def preview_label(self, row: TreeRow, limit: int = 40) -> str:
        return sanitize_line(row.label or "", limit)


# ------------------------------------------------------------------ what the layout hands out


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

    @overload
    def get(self, entry_id: str, /) -> TreeRow | None: ...
    @overload
    def get(self, entry_id: str, /, default: TreeRow | T) -> TreeRow | T: ...

    def get(self, entry_id: object, /, default: object = None) -> object:
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
