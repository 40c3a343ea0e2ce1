"""The session tree in memory, built from `TreeRow`s: the one tree model of the front ends.

The controller (`treechat.chat`) owns a `TreeIndex`, adds rows as entries are appended and hands
it to the tree widget, which only reads it (`TreeView` / `TreeLayout` take a `TreeSnapshot`).
Everything about "the shape of the tree" that the screen needs is answered here, with one rule
for each question:

- **Sibling order**: the children of a parent in timestamp order (arrival order breaks ties and
  orders unparseable stamps): what `‹ n/m ›`, `[`/`]` and the tree's drawing all use.
- **Alternatives** (`siblings`): the conversation children of the same parent — message,
  compaction, branch summary, custom message. Settings and labels are not alternatives.
- **Branches** (`branch_count`): conversation tips, i.e. conversation entries with no conversation
  entry below them. Names, labels, model or thinking changes never make a branch, wherever they
  hang; a linear chat has exactly one branch whatever metadata it carries.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, Mapping, Protocol, Sequence

from .base import TreeRow
from .gc_policy import paused
from .model import iso_to_ms

CONVERSATION_TYPES = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def is_conversation(row: TreeRow) -> bool:
    return row.type in CONVERSATION_TYPES


def _time(row: TreeRow) -> float:
    ms = iso_to_ms(row.timestamp)
    return float("-inf") if ms != ms else float(ms)  # NaN (unparseable) sorts first, like Pi's sort


class TreeSnapshot(Protocol):
    """What a reader of the tree may use (the widget gets this view; only the owner adds rows)."""

    @property
    def by_id(self) -> Mapping[str, TreeRow]: ...

    @property
    def children(self) -> Mapping[str | None, Sequence[str]]: ...

    def __len__(self) -> int: ...


class TreeIndex:
    """Rows by id and children by parent (in sibling order), kept as rows arrive."""

    __slots__ = ("_by_id", "_children", "_with_conv_child", "_tips", "_counted")

    def __init__(self) -> None:
        self._by_id: dict[str, TreeRow] = {}  # in append order (a relabel keeps the position)
        self._children: dict[str | None, list[str]] = {}
        # conversation rows that have a conversation row below them (branch counting, lazily)
        self._with_conv_child: set[str] = set()
        self._tips = 0
        self._counted = False

    @classmethod
    def build(cls, rows: Iterable[TreeRow]) -> "TreeIndex":
        """One pass over up to 100k rows. Rows come in append order; children lists are put in
        timestamp order (a stable sort, only when some parent's children arrived out of order).
        The branch count is left to the first ``branch_count()`` (after the first frame)."""
        index = cls()
        with paused():
            rows = rows if isinstance(rows, list) else list(rows)
            index._by_id = {r.id: r for r in rows}
            children: dict[str | None, list[str]] = {}
            get = children.get
            in_order = True  # rows in time order (the usual case) make every children list sorted
            previous = ""
            for r in rows:
                pid = r.parent_id
                kids = get(pid)
                if kids is None:
                    children[pid] = [r.id]
                else:
                    kids.append(r.id)
                if in_order:
                    if r.timestamp < previous:  # ISO-8601 stamps of one writer sort as text
                        in_order = False
                    previous = r.timestamp
            if not in_order:
                by_id = index._by_id
                for kids in children.values():
                    if len(kids) > 1:  # a stable sort: equal times keep their arrival order
                        kids.sort(key=lambda cid: _time(by_id[cid]))
            index._children = children
        return index

    # ------------------------------------------------------------ reading

    @property
    def by_id(self) -> Mapping[str, TreeRow]:
        return self._by_id

    @property
    def children(self) -> Mapping[str | None, Sequence[str]]:
        return self._children

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def get(self, entry_id: str | None) -> TreeRow | None:
        return self._by_id.get(entry_id) if entry_id is not None else None

    def path_ids(self, leaf_id: str | None) -> list[str]:
        """Ids root → leaf, following parents (cycle-safe)."""
        out: list[str] = []
        seen: set[str] = set()
        cur = leaf_id
        by_id = self._by_id
        while cur is not None and cur in by_id and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = by_id[cur].parent_id
        out.reverse()
        return out

    def siblings(self, entry_id: str) -> list[str]:
        """The alternatives at an entry's point of the tree, in sibling order (itself included)."""
        row = self._by_id.get(entry_id)
        if row is None:
            return []
        by_id = self._by_id
        return [c for c in self._children.get(row.parent_id, ()) if by_id[c].type in CONVERSATION_TYPES]

    def newest_tip_under(self, entry_id: str) -> str:
        """Follow the newest conversation child down to a tip (where a sibling switch lands);
        settings and labels below the tip are followed too, so the leaf is the newest entry."""
        by_id, seen, cur = self._by_id, set(), entry_id
        while cur not in seen:
            seen.add(cur)
            kids = [c for c in self._children.get(cur, ()) if by_id[c].type != "label"]
            if not kids:
                break
            conv = [c for c in kids if by_id[c].type in CONVERSATION_TYPES]
            cur = (conv or kids)[-1]
        return cur

    def fork_points(self, leaf_id: str | None) -> list[str]:
        """Entries on the path root → leaf where the conversation has alternatives (for jumps)."""
        return [e for e in self.path_ids(leaf_id) if len(self.siblings(e)) > 1]

    def branch_count(self) -> int:
        """Conversation tips (at least 1 once there is any conversation)."""
        if not self._counted:
            self._count()
        return self._tips

    # ------------------------------------------------------------ growing (the owner only)

    def add(self, row: TreeRow) -> None:
        """One new row (appended by this process or noticed from another one)."""
        if row.id in self._by_id:
            return
        self._by_id[row.id] = row
        kids = self._children.setdefault(row.parent_id, [])
        if kids and row.timestamp < self._by_id[kids[-1]].timestamp and _time(row) < _time(self._by_id[kids[-1]]):
            times = [_time(self._by_id[c]) for c in kids]
            kids.insert(bisect_right(times, _time(row)), row.id)
        else:
            kids.append(row.id)
        if self._counted and row.type in CONVERSATION_TYPES:
            self._count_one(row)

    def relabel(self, target_id: str, label: str | None) -> TreeRow | None:
        """A label entry changed `target_id`'s label: its row is replaced (rows are tuples)."""
        row = self._by_id.get(target_id)
        if row is None:
            return None
        new = row._replace(label=label)
        self._by_id[target_id] = new
        return new

    # ------------------------------------------------------------ branch counting

    def _nearest_conv_ancestor(self, row: TreeRow) -> str | None:
        by_id, seen, pid = self._by_id, set(), row.parent_id
        while pid is not None and pid not in seen:
            parent = by_id.get(pid)
            if parent is None:
                return None
            if parent.type in CONVERSATION_TYPES:
                return pid
            seen.add(pid)
            pid = parent.parent_id
        return None

    def _count(self) -> None:
        with paused():
            cache: dict[str, str | None] = {}  # non-conversation id -> its nearest conversation ancestor
            by_id = self._by_id
            with_child: set[str] = set()
            conv = 0
            for row in by_id.values():
                if row.type not in CONVERSATION_TYPES:
                    continue
                conv += 1
                chain: list[str] = []
                pid = row.parent_id
                found: str | None = None
                seen: set[str] = set()
                while pid is not None and pid not in seen:
                    if pid in cache:
                        found = cache[pid]
                        break
                    parent = by_id.get(pid)
                    if parent is None:
                        break
                    if parent.type in CONVERSATION_TYPES:
                        found = pid
                        break
                    seen.add(pid)
                    chain.append(pid)
                    pid = parent.parent_id
                for hidden in chain:
                    cache[hidden] = found
                if found is not None:
                    with_child.add(found)
            self._with_conv_child = with_child
            self._tips = conv - len(with_child)
            self._counted = True

    def _count_one(self, row: TreeRow) -> None:
        self._tips += 1
        parent = self._nearest_conv_ancestor(row)
        if parent is not None and parent not in self._with_conv_child:
            self._with_conv_child.add(parent)
            self._tips -= 1
