"""What the screen shows, computed from the session: tree index, transcript items, siblings.

Kept apart from the App so the rules (what a sibling is, which path is active, what the
transcript holds after a compaction) are plain functions over storage data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from treechat.storage.base import TreeRow
from treechat.storage.model import BranchSummaryEntry, CompactionEntry, Entry, message_text
from treechat.widgets.message_view import TranscriptItem

from .session.context import entry_to_message, transform_path


@dataclass
class TreeIndex:
    """The tree skeleton in memory: rows by id and children by parent (message/summary nodes)."""

    rows: list[TreeRow] = field(default_factory=list)
    by_id: dict[str, TreeRow] = field(default_factory=dict)
    children: dict[str | None, list[str]] = field(default_factory=dict)
    tips: int = 0  # branches: entries without children other than labels, kept as rows arrive
    _with_kids: set[str] = field(default_factory=set)
    # After build(): tips not counted yet for rows[:_uncounted] (counted on the first
    # branch_count(), after the first frame has been drawn); rows added meanwhile wait in _pending.
    _uncounted: int | None = None
    _pending: list[TreeRow] = field(default_factory=list)

    @classmethod
    def build(cls, rows: Sequence[TreeRow]) -> "TreeIndex":
        """One pass over up to 100k rows (the same result as adding them one by one); the branch
        count is left to the first ``branch_count()``."""
        index = cls(rows=list(rows))
        index.by_id = {r.id: r for r in rows}
        children: dict[str | None, list[str]] = {}
        get = children.get
        for r in rows:
            pid = r.parent_id
            kids = get(pid)
            if kids is None:
                children[pid] = [r.id]
            else:
                kids.append(r.id)
        index.children = children
        index._uncounted = len(index.rows)
        return index

    def _count_tips(self) -> None:
        if self._uncounted is None:
            return
        rows = self.rows[: self._uncounted]
        self._uncounted = None
        with_kids = self._with_kids = {r.parent_id for r in rows if r.type != "label"}
        with_kids.discard(None)  # type: ignore[arg-type]
        # a parent that is only ever a label's parent is not "with kids"; labels were skipped above
        self.tips = sum(1 for r in rows if r.type != "label" and r.id not in with_kids)
        pending, self._pending = self._pending, []
        for row in pending:
            self._count_added(row)

    def add(self, row: TreeRow, keep: bool = True) -> None:
        if keep:
            self.rows.append(row)
        self.by_id[row.id] = row
        self.children.setdefault(row.parent_id, []).append(row.id)
        if row.type == "label":
            return
        if self._uncounted is not None:
            self._pending.append(row)
        else:
            self._count_added(row)

    def _count_added(self, row: TreeRow) -> None:
        if row.id not in self._with_kids:
            self.tips += 1
        parent = row.parent_id
        if parent is not None and parent not in self._with_kids:
            self._with_kids.add(parent)
            if parent in self.by_id and self.by_id[parent].type != "label":
                self.tips -= 1  # the parent was a tip until now

    def path_ids(self, leaf_id: str | None) -> list[str]:
        """Ids root → leaf, following parents through the rows (cycle-safe)."""
        out: list[str] = []
        seen: set[str] = set()
        cur = leaf_id
        while cur is not None and cur in self.by_id and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = self.by_id[cur].parent_id
        out.reverse()
        return out

    def siblings(self, entry_id: str) -> list[str]:
        """Alternatives at the same point: message/summary children of the same parent, oldest first."""
        row = self.by_id.get(entry_id)
        if row is None:
            return []
        kin = [self.by_id[c] for c in self.children.get(row.parent_id, [])]
        kin = [r for r in kin if r.type in ("message", "branch_summary", "compaction")]
        kin.sort(key=lambda r: r.timestamp)
        return [r.id for r in kin]

    def newest_leaf_under(self, entry_id: str) -> str:
        """Follow the newest child down to a tip (where a sibling switch lands)."""
        cur, seen = entry_id, set()
        while cur not in seen:
            seen.add(cur)
            kids = [self.by_id[c] for c in self.children.get(cur, []) if self.by_id[c].type != "label"]
            if not kids:
                break
            cur = max(kids, key=lambda r: r.timestamp).id
        return cur

    def branch_count(self) -> int:
        """Tips of the tree (entries without children other than labels)."""
        self._count_tips()
        return self.tips


def transcript_items(path: Sequence[Entry], labels: dict[str, str]) -> list[TranscriptItem]:
    """The transcript for a path (as read up to its last compaction): what the model sees, with
    the compaction and branch summaries as cards carrying their entry."""
    items: list[TranscriptItem] = []
    for entry in transform_path(path):
        if isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
            if isinstance(entry, BranchSummaryEntry) and not entry.summary:
                continue
            items.append(TranscriptItem(entry.id, entry, label=labels.get(entry.id),
                                        trigger=getattr(entry, "trigger", None),
                                        tokens_after=getattr(entry, "tokens_after", None)))
            continue
        msg = entry_to_message(entry)
        if msg is not None:
            items.append(TranscriptItem(entry.id, msg, label=labels.get(entry.id)))
    return items


def item_for(entry: Entry, label: str | None = None) -> TranscriptItem | None:
    if isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
        return TranscriptItem(entry.id, entry, label=label)
    msg = entry_to_message(entry)
    return TranscriptItem(entry.id, msg, label=label) if msg is not None else None


def originals_of(full_path: Sequence[Entry], compaction: CompactionEntry) -> list[TranscriptItem]:
    """The messages a compaction took out of the context (dimmed in the transcript)."""
    stop = compaction.id if compaction.retained_tail else compaction.first_kept_entry_id
    out: list[TranscriptItem] = []
    for entry in full_path:
        if entry.id in (stop, compaction.id):
            break
        msg = entry_to_message(entry)
        if msg is not None:
            out.append(TranscriptItem(entry.id, msg, outside_context=True))
    return out


def first_line(message: Any, limit: int = 60) -> str:
    text = " ".join(message_text(message).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
