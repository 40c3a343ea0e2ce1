"""What a branch summary covers when the leaf moves away (Pi §8.1–8.2).

The abandoned part is the path from the old leaf back to the common ancestor with the target,
stopping early at a compaction (its summary already covers what lies before it).
"""

from __future__ import annotations

from typing import Any, Sequence

from storage.model import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ToolResultMessage,
)

from .compaction import FileOps, estimate_tokens
from .context import compaction_message, entry_to_message


def abandoned_entries(old_path: Sequence[Entry], target_path: Sequence[Entry]) -> list[Entry]:
    """Entries on `old_path` (root-first) after the deepest entry it shares with `target_path`,
    starting after the last compaction among them, if any."""
    target_ids = {e.id for e in target_path}
    start = 0
    for i, entry in enumerate(old_path):
        if entry.id in target_ids:
            start = i + 1
    tail = list(old_path[start:])
    for i in range(len(tail) - 1, -1, -1):
        if isinstance(tail[i], CompactionEntry):
            return tail[i:]
    return tail


def prepare_branch_messages(entries: Sequence[Entry], token_budget: int = 0) -> tuple[list[Any], FileOps]:
    """Messages for the summariser, newest kept first when over budget; tool results skipped."""
    ops = FileOps()
    for e in entries:
        if isinstance(e, BranchSummaryEntry) and not e.from_hook and isinstance(e.details, dict):
            ops.read.update(p for p in e.details.get("readFiles", []) if isinstance(p, str))
            ops.modified.update(p for p in e.details.get("modifiedFiles", []) if isinstance(p, str))
    picked: list[Any] = []
    total = 0
    for e in reversed(entries):
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage):
            continue
        if isinstance(e, CompactionEntry):
            msg: Any = compaction_message(e)
        elif isinstance(e, (MessageEntry, CustomMessageEntry, BranchSummaryEntry)):
            msg = entry_to_message(e)
        else:
            continue
        if msg is None:
            continue
        ops.add_from(msg)
        tokens = estimate_tokens(msg)
        if token_budget > 0 and total + tokens > token_budget:
            if isinstance(e, (CompactionEntry, BranchSummaryEntry)) and total < 0.9 * token_budget:
                picked.insert(0, msg)
            break
        picked.insert(0, msg)
        total += tokens
    return picked, ops
