"""Flattening a session tree into display lines (pure data; ``TreeView`` draws it).

One O(n) pass, no recursion (5,000-deep chains and 100k entries), no per-row objects beyond a
tuple. Rules (Pi's /tree): a row is indented only where its parent has several visible
children — single-child chains continue at the same indent. Rows hidden by the filter are
skipped and their children attach to the nearest visible ancestor, so nothing is orphaned.

The gutter of a line is a persistent linked list ``(continues, outer, depth)``: a fork child
adds one level in O(1), whatever the depth; the renderer walks only the levels it can show.
"""

from __future__ import annotations

from typing import Any, Callable, Container, Mapping, Sequence

from treechat.storage.base import TreeRow
from treechat.storage.gc_policy import paused
from treechat.storage.tree_index import CONVERSATION_TYPES, TreeSnapshot

from .sanitize import sanitize_line
from .tree_flatten import break_cycles, flatten
from .tree_query import Haystacks, narrow, query_words
from .tree_rows import CHILDREN, ELBOW, GUTTER, NONE, ROW, TEE, Gutter, Line, row_visible, visibility

# Rows that are alternatives of one another (the index's rule): what "+N hidden" counts.
_ALTERNATIVE_TYPES = CONVERSATION_TYPES


class TreeLayout:
    """The flattened, filtered, folded display lines of one session's tree.

    The rows and the children map are the controller's ``TreeIndex`` (a ``TreeSnapshot``), read
    and never changed here: the index is the one tree model, with the one sibling order."""

    def __init__(self) -> None:
        self.rows: Mapping[str, TreeRow] = {}
        self._kids: Mapping[str | None, Sequence[str]] = {}  # every row's id under its parent
        self.mode = "default"
        self.query = ""
        self.folded: set[str] = set()
        self.lines: list[Line] = []
        # Visible parent / children maps: built only by the general pass (a query, orphans,
        # cycles); the common pass walks ``_kids`` and answers per entry (``visible_parent``).
        self._vparent: dict[str, str | None] | None = {}
        self._vchildren: dict[str | None, list[str]] | None = {}
        self._pos: dict[str, int] | None = None  # row order, for merging children of hidden rows
        self._order: list[str] | None = None  # the same as a list (a few lookups)
        self._order_lookups = 0
        self._ids: list[str] = []  # line → entry id
        self._index: dict[str, int] | None = {}
        self._lookups: dict[str, int | None] = {}  # index_of answers before the full index exists
        self.retired: list[tuple[Any, ...]] = []
        self.haystacks = Haystacks()
        self.matches: frozenset[str] = frozenset()  # with a query: the rows that match it
        self.context: frozenset[str] = frozenset()  # with a query: fork points kept for the drawing
        self.generation = 0  # bumped whenever the lines change (caches key on it)
        self._hidden_under: dict[str, int] = {}
        self._keep: frozenset[str] | None = None  # with a query: the rows it keeps
        self._total: int | None = None

    # ------------------------------------------------------------ building

    def set_index(self, index: TreeSnapshot) -> None:
        """A (new) tree. The previous lines are moved to ``retired`` (the caller may free them
        after the next frame: 100k lines take ~20 ms to free)."""
        self.retired.append((self.lines, self._ids, self._index, self._vparent, self._vchildren, self._pos,
                             self._order))
        self.lines, self._ids, self._index = [], [], {}
        self.rows, self._kids = index.by_id, index.children
        self.haystacks.reset()
        self._total = None
        self._pos = self._order = None
        self._order_lookups = 0
        self.rebuild()

    def _children_map(self) -> Mapping[str | None, Sequence[str]]:
        return self._kids

    @property
    def vparent(self) -> dict[str, str | None]:
        """Visible id → visible parent id (built on demand; prefer ``visible_parent``)."""
        if self._vparent is None:
            self._vparent = {rid: self.visible_parent(rid) for rid, r in self.rows.items() if self._is_visible(r)}
        return self._vparent

    @property
    def vchildren(self) -> dict[str | None, list[str]]:
        """Visible parent id (None = roots) → visible children (built on demand)."""
        if self._vchildren is None:
            children: dict[str | None, list[str]] = {}
            for rid, pid in self.vparent.items():
                children.setdefault(pid, []).append(rid)
            self._vchildren = children
        return self._vchildren

    def _is_visible(self, row: TreeRow) -> bool:
        keep = self._keep
        return row_visible(row, self.mode) and (keep is None or row.id in keep)

    def _visibility(self) -> tuple[frozenset[str], Callable[[TreeRow], bool] | None]:
        """The filter mode's (hidden types, predicate), narrowed to the query's rows if any."""
        hidden, pred = visibility(self.mode)
        keep = self._keep
        if keep is None:
            return hidden, pred
        if pred is None:
            return hidden, lambda r: r.id in keep
        mode_pred = pred
        return hidden, lambda r: r.id in keep and mode_pred(r)

    def visible_parent(self, entry_id: str | None) -> str | None:
        """The nearest shown-by-the-filter ancestor of a visible entry (None for roots and for
        entries the filter hides)."""
        if entry_id is None:
            return None
        if self._vparent is not None:
            return self._vparent.get(entry_id)
        row = self.rows.get(entry_id)
        if row is None or not self._is_visible(row):
            return None
        return self._visible_parent(row, _VisibleIds(self), {})

    def visible_children(self, parent_id: str | None) -> list[str]:
        if self._vchildren is not None:
            return self._vchildren.get(parent_id, [])
        hidden, pred = self._visibility()
        return self._expand(self._children_map().get(parent_id, ()), hidden, pred, None)

    def _visible_parent(self, row: TreeRow, visible: Container[str], cache: dict[str, str | None]) -> str | None:
        """Nearest visible ancestor (``visible`` is any container of visible ids); memoised
        walk over hidden rows, cycle-safe (a cycle ends the walk)."""
        chain: list[str] = []
        seen: set[str] = set()
        pid = row.parent_id
        result: str | None = None
        while pid is not None and pid in self.rows:
            if pid in visible:
                result = pid
                break
            if pid in cache:
                result = cache[pid]
                break
            if pid in seen:
                break
            seen.add(pid)
            chain.append(pid)
            pid = self.rows[pid].parent_id
        for hidden in chain:
            cache[hidden] = result
        return result

    def rebuild(self) -> None:
        # The pass allocates ~n tuples/lists and no cycles (see storage.gc_policy).
        with paused():
            self._rebuild()

    def _rebuild(self) -> None:
        self._index = None
        self._lookups = {}
        self.generation += 1
        self._hidden_under = {}
        self.matches = self.context = frozenset()
        self._keep = None
        words = query_words(self.query)
        if words:
            # only the matches (and the fork points where they meet) are visible; the usual
            # passes put each under its nearest visible ancestor (``tree_query``)
            mode = self.mode
            result = narrow(self.rows, self.haystacks.get(self.rows), words, lambda r: row_visible(r, mode))
            self.matches, self.context = result
            self._keep = result.matches | result.context
        out = self._flatten_kids()
        if out is not None:
            self.lines, self._ids = out
            self._vparent = self._vchildren = None
            return
        self._rebuild_general()

    def _rebuild_general(self) -> None:
        """Any input: orphans (their nearest present ancestor is missing) become roots, so does
        the first row of a parent cycle."""
        is_visible = self._is_visible
        visible = {rid for rid, r in self.rows.items() if is_visible(r)}
        cache: dict[str, str | None] = {}
        vparent: dict[str, str | None] = {}
        children: dict[str | None, list[str]] = {}
        for rid, row in self.rows.items():
            if rid in visible:
                pid = row.parent_id
                if pid not in visible:
                    pid = self._visible_parent(row, visible, cache)
                vparent[rid] = pid
                if pid in children:
                    children[pid].append(rid)
                else:
                    children[pid] = [rid]
        break_cycles(vparent, children)
        self._vparent, self._vchildren = vparent, children
        self.lines = flatten(self.rows, children, self.folded)
        self._ids = [line[ROW].id for line in self.lines]

    def _expand(self, kids: Sequence[str], hidden: frozenset[str], pred: Callable[[TreeRow], bool] | None,
                counter: list[int] | None) -> list[str]:
        """Visible ids among ``kids``, a hidden one replaced by its own visible descendants (the
        same nearest-visible-ancestor rule as the general pass, in row order)."""
        rows, kids_map = self.rows, self._kids
        out: list[str] = []
        spliced = False
        stack = list(reversed(kids))
        while stack:
            k = stack.pop()
            r = rows[k]
            if r.type not in hidden and (pred is None or pred(r)):
                out.append(k)
                continue
            if counter is not None:
                counter[0] += 1
            grand = kids_map.get(k)
            if grand:
                spliced = True
                stack.extend(reversed(grand))
        if spliced and len(out) > 1:
            out.sort(key=self._row_position)
        return out

    def _row_position(self, entry_id: str) -> int:
        """Where a row is in row order: the first few answers scan the ids (a fork under a hidden
        row is rare), many build a map."""
        pos = self._pos
        if pos is None:
            self._order_lookups += 1
            if self._order_lookups <= 32:
                if self._order is None:
                    self._order = list(self.rows)
                return self._order.index(entry_id)
            pos = self._pos = {rid: i for i, rid in enumerate(self.rows)}
        return pos[entry_id]

    def _subtree_size(self, roots: Sequence[str]) -> int:
        kids_map, n, stack = self._kids, 0, list(roots)
        while stack:
            n += 1
            grand = kids_map.get(stack.pop())
            if grand:
                stack.extend(grand)
        return n

    def _flatten_kids(self) -> tuple[list[Line], list[str]] | None:
        """The lines from the children map, hidden rows spliced out on the way. None when the
        rows are not one forest reachable from the roots (orphans, cycles): the general pass
        handles those."""
        rows, folded = self.rows, self.folded
        kids_map = self._children_map()
        n = len(rows)
        hidden, pred = self._visibility()
        counter = [0]  # hidden rows and rows under folds, walked
        expand = self._expand
        lines: list[Line] = []
        ids: list[str] = []
        roots = expand(kids_map.get(None, ()), hidden, pred, counter)
        stack: list[tuple[str, TreeRow, Gutter | None, int]] = []
        if len(roots) > 1:
            for i in range(len(roots) - 1, -1, -1):
                last = i == len(roots) - 1
                stack.append((roots[i], rows[roots[i]], (not last, None, 1), ELBOW if last else TEE))
        elif roots:
            stack.append((roots[0], rows[roots[0]], None, NONE))
        append, id_append, pop, push, get = lines.append, ids.append, stack.pop, stack.append, kids_map.get
        while stack:
            rid, row, gutter, connector = pop()
            while True:
                kids = get(rid)
                if kids is not None and len(kids) == 1:
                    # the common case, a chain: one visible child continues at the same indent
                    r = rows[kids[0]]
                    if r.type not in hidden and (pred is None or pred(r)) and not (folded and rid in folded):
                        append((row, gutter, connector, 1, False))
                        id_append(rid)
                        rid, row, connector = kids[0], r, NONE
                        continue
                if kids:
                    if len(kids) == 1:
                        r = rows[kids[0]]
                        if not (r.type not in hidden and (pred is None or pred(r))):
                            kids = expand(kids, hidden, pred, counter)
                            if len(kids) == 1:
                                r = rows[kids[0]]
                    else:
                        kids = expand(kids, hidden, pred, counter)
                        if len(kids) == 1:
                            r = rows[kids[0]]
                if not kids:
                    append((row, gutter, connector, 0, False))
                    id_append(rid)
                    break
                nk = len(kids)
                if folded and rid in folded:
                    append((row, gutter, connector, nk, True))
                    id_append(rid)
                    counter[0] += self._subtree_size(kids)
                    break
                append((row, gutter, connector, nk, False))
                id_append(rid)
                if nk == 1:
                    # a chain continues at the same indent; the fork line (if any) keeps running
                    rid, row, connector = kids[0], r, NONE
                    continue
                depth = gutter[2] + 1 if gutter else 1
                last_i = nk - 1
                for i in range(last_i, -1, -1):
                    k = kids[i]
                    push((k, rows[k], (i != last_i, gutter, depth), ELBOW if i == last_i else TEE))
                break
        if len(lines) + counter[0] != n:
            return None
        return lines, ids

    # ------------------------------------------------------------ live growth

    def add_row(self, row: TreeRow) -> bool:
        """A row the index gained (added there first). Returns True when the lines changed only
        by an insert (no rebuild needed).

        The fast path covers the common live case — a new child of a row that had no visible
        children (the conversation growing at the leaf); anything else rebuilds.
        """
        self._pos = self._order = None
        self._order_lookups = 0
        self.haystacks.update(row)
        if self._total is not None and row.type != "leaf":
            self._total += 1
        if query_words(self.query):
            self.rebuild()
            return False
        if not row_visible(row, self.mode):
            return True
        pid = self.visible_parent(row.id) if self._vparent is None else self._visible_parent(row, self._vparent, {})
        at = self.index_of(pid)
        if at is None or self.lines[at][CHILDREN] or pid in self.folded:
            self.rebuild()
            return False
        parent_line = self.lines[at]
        if self._vparent is not None:
            self._vparent[row.id] = pid
            assert self._vchildren is not None
            self._vchildren[pid] = [row.id]
        self.lines[at] = parent_line[:CHILDREN] + (1, False)
        self.lines.insert(at + 1, (row, parent_line[GUTTER], NONE, 0, False))
        self._ids.insert(at + 1, row.id)
        self._lookups = {}
        self.generation += 1
        if at + 2 < len(self.lines):
            self._index = None  # later rows shifted
        elif self._index is not None:
            self._index[row.id] = at + 1
        return True

    def replace_row(self, row: TreeRow) -> int | None:
        """The index replaced a row (a new label): its line shows the new one. Returns the line."""
        self.haystacks.update(row)
        at = self.index_of(row.id)
        if at is not None:
            self.lines[at] = (row,) + self.lines[at][ROW + 1:]
        return at

    # ------------------------------------------------------------ counts (for the drawing)

    @property
    def total(self) -> int:
        """Rows a filter could show (every row but ``leaf`` pointers); counted once per tree."""
        if self._total is None:
            self._total = sum(1 for r in self.rows.values() if r.type != "leaf")
        return self._total

    @property
    def total_counted(self) -> bool:
        return self._total is not None

    def hidden_under(self, entry_id: str) -> int:
        """Rows the filter (and query) would show below a folded row (what unfolding brings back)."""
        count = self._hidden_under.get(entry_id)
        if count is None:
            hidden, pred = self._visibility()
            rows, kids_map, count = self.rows, self._kids, 0
            stack = list(kids_map.get(entry_id, ()))
            while stack:
                r = rows[stack.pop()]
                if r.type not in hidden and (pred is None or pred(r)):
                    count += 1
                grand = kids_map.get(r.id)
                if grand:
                    stack.extend(grand)
            self._hidden_under[entry_id] = count
        return count

    def hidden_alternatives(self, row: TreeRow) -> int:
        """Alternatives of a row (other replies or prompts at the same point) that have no line:
        what the filter or the query hides there. Without a filter that hides conversation rows
        nothing can be hidden, and nothing is looked up."""
        if self.mode in ("default", "all") and not self.matches and not self.context:
            return 0
        kids = self._kids.get(row.parent_id, ())
        if len(kids) < 2:
            return 0
        rows = self.rows
        return sum(1 for k in kids if k != row.id and rows[k].type in _ALTERNATIVE_TYPES and self.index_of(k) is None)

    # ------------------------------------------------------------ lookups

    def index_of(self, entry_id: str | None) -> int | None:
        if entry_id is None:
            return None
        if self._index is None:
            # The first few lookups after a rebuild (cursor, leaf) scan the id list instead of
            # indexing 100k lines before the first frame; many lookups build the index.
            lookups = self._lookups
            if entry_id in lookups:
                return lookups[entry_id]
            if len(lookups) < 16:
                try:
                    at: int | None = self._ids.index(entry_id)
                except ValueError:
                    at = None
                lookups[entry_id] = at
                return at
            self._index = {rid: i for i, rid in enumerate(self._ids)}
        return self._index.get(entry_id)

    def shown_ancestor(self, entry_id: str | None) -> str | None:
        """The entry itself if it has a line, else its nearest ancestor that has one."""
        seen: set[str] = set()
        while entry_id is not None and entry_id not in seen:
            if self.index_of(entry_id) is not None:
                return entry_id
            seen.add(entry_id)
            row = self.rows.get(entry_id)
            entry_id = row.parent_id if row else None
        return None

    def siblings(self, entry_id: str) -> list[str]:
        if self._vparent is not None:
            return self.vchildren.get(self._vparent.get(entry_id), [])
        row = self.rows.get(entry_id)
        if row is None or not self._is_visible(row):
            return self.visible_children(None)  # as vchildren.get(vparent.get(hidden)): the roots
        return self.visible_children(self.visible_parent(entry_id))

    def unfold_to(self, entry_id: str) -> bool:
        """Unfold every folded ancestor of an entry; True if anything changed (then rebuild)."""
        changed = False
        seen: set[str] = set()
        row = self.rows.get(entry_id)
        while row is not None and row.parent_id is not None and row.parent_id not in seen:
            seen.add(row.parent_id)
            if row.parent_id in self.folded:
                self.folded.discard(row.parent_id)
                changed = True
            row = self.rows.get(row.parent_id)
        return changed

    def preview(self, row: TreeRow, limit: int = 200) -> str:
        return sanitize_line(row.preview, limit)

    def preview_label(self, row: TreeRow, limit: int = 40) -> str:
        return sanitize_line(row.label or "", limit)


class _VisibleIds:
    """``id in visible`` answered from the rows and the filter (no set of 100k ids)."""

    __slots__ = ("layout",)

    def __init__(self, layout: TreeLayout) -> None:
        self.layout = layout

    def __contains__(self, entry_id: object) -> bool:
        row = self.layout.rows.get(entry_id) if isinstance(entry_id, str) else None
        return row is not None and self.layout._is_visible(row)
