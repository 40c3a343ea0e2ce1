"""What a fork copies: the path root → entry as a new session can hold it (every backend's
`SessionCatalog.fork` writes these entries, then the label chain).

Like Pi's createBranchedSession, label entries (and leaf markers) are left out of the copy and
the labels of path entries come back as a fresh chain after it. Unlike a plain filter, nothing the
copy keeps may point at an entry it left out: an entry whose parent was a label (a `/name` or a
setting appended after `/label`) hangs under its nearest kept ancestor, and a compaction whose
first kept entry was a label keeps from the next entry, so the new session's path still reaches
its root and builds the same context.
"""

from __future__ import annotations

from typing import Sequence

from .model import CompactionEntry, Entry, LabelEntry, LeafEntry


def fork_copy(path: Sequence[Entry]) -> list[Entry]:
    """`path` (root first) without its label and leaf entries, every kept entry's parent the
    nearest kept entry above it (copies where that changes; the originals are not touched)."""
    dropped = {e.id for e in path if isinstance(e, (LabelEntry, LeafEntry))}
    kept_after: dict[str, str | None] = {}  # a dropped entry -> the first kept entry after it
    waiting: list[str] = []
    out: list[Entry] = []
    parent: str | None = None
    for entry in path:
        if entry.id in dropped:
            waiting.append(entry.id)
            continue
        for gone in waiting:
            kept_after[gone] = entry.id
        waiting = []
        if entry.parent_id != parent:
            entry = entry.model_copy(update={"parent_id": parent})
        out.append(entry)
        parent = entry.id
    for i, entry in enumerate(out):
        if isinstance(entry, CompactionEntry) and entry.first_kept_entry_id in dropped:
            # (a label at the very end, after the compaction: keep from the compaction itself)
            first = kept_after.get(entry.first_kept_entry_id) or entry.id
            out[i] = entry.model_copy(update={"first_kept_entry_id": first})
    return out
