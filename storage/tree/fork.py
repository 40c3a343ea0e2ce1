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

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..model_lite import new_entry_id

if TYPE_CHECKING:
    from ..model import Entry

# The models are imported where a fork copies them (a path of models: pydantic is loaded by then),
# so the stores that import this module start without pydantic (a streamed `treechat import`).


def fork_copy(path: Sequence[Entry]) -> list[Entry]:
    """`path` (root first) without its label and leaf entries, every kept entry's parent the
    nearest kept entry above it (copies where that changes; the originals are not touched)."""
    from ..model import CompactionEntry, LabelEntry, LeafEntry

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


def forked_entries(path: Sequence[Entry], labels: Iterable[tuple[str, str, str]],
                   new_id: Callable[[set[str]], str] = new_entry_id) -> list[Entry]:
    """Everything a fork writes, in order: `fork_copy(path)`, then (like Pi's createBranchedSession)
    the labels of its entries as a fresh chain after it, each keeping its original timestamp.
    `labels`: (target id, label, timestamp) in the order they were set; `new_id` draws an id not in
    the set it is given. One rule for every backend's `SessionCatalog.fork`."""
    from ..model import LabelEntry

    entries = fork_copy(path)
    on_path = {e.id for e in entries}
    taken = set(on_path)
    for target, label, timestamp in labels:
        if target not in on_path:
            continue
        label_id = new_id(taken)
        taken.add(label_id)
        # (forking at a root label leaves no path: the chain then starts at the root)
        entries.append(LabelEntry(id=label_id, parent_id=entries[-1].id if entries else None,
                                  timestamp=timestamp, target_id=target, label=label))
    return entries
