"""Leaving a branch: what a branch summary covers (Pi 0.73.1's branch-summarization.ts), writing that summary, and
forking a path into a new session.

The abandoned part is the path from the old leaf back to the common ancestor with the target,
stopping early at a compaction (its summary already covers what lies before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from treechat.agent.types import AgentMessage
from treechat.storage.base import EntryNotFoundError, SessionCatalog, SessionStorage
from treechat.storage.model import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ToolResultMessage,
    message_text,
)

from .compaction import FileOps, estimate_tokens
from .context import compaction_message, entry_to_message
from .summarize import Complete, summarize_branch

if TYPE_CHECKING:
    from .session import BranchWriter, Session

BRANCH_RESERVE_TOKENS = 16384


class NothingToSummarize(Exception):
    """The branch that was left holds nothing of its own to summarise."""


class ForkError(ValueError):
    """A fork that cannot be made as asked; the message says what to choose instead."""


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


def prepare_branch_messages(entries: Sequence[Entry], token_budget: int = 0) -> tuple[list[AgentMessage], FileOps]:
    """Messages for the summariser, newest kept first when over budget; tool results skipped."""
    ops = FileOps()
    for e in entries:
        if isinstance(e, BranchSummaryEntry) and not e.from_hook and isinstance(e.details, dict):
            ops.read.update(p for p in e.details.get("readFiles", []) if isinstance(p, str))
            ops.modified.update(p for p in e.details.get("modifiedFiles", []) if isinstance(p, str))
    picked: list[AgentMessage] = []
    total = 0
    for e in reversed(entries):
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage):
            continue
        if isinstance(e, CompactionEntry):
            msg: AgentMessage | None = compaction_message(e)
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


async def write_branch_summary(session: Session | BranchWriter, abandoned_leaf_id: str, complete: Complete, context_window: int,
                               custom_instructions: str | None = None) -> str:
    """Summarise the path from `abandoned_leaf_id` back to the common ancestor with the current
    leaf and append it as a branch_summary child of the leaf (which advances onto it)."""
    old_path = await session.get_branch(abandoned_leaf_id)  # EntryNotFoundError names the id
    entries = abandoned_entries(old_path, await session.get_branch())
    budget = context_window - BRANCH_RESERVE_TOKENS if context_window > BRANCH_RESERVE_TOKENS else 0
    messages, ops = prepare_branch_messages(entries, budget)
    if not messages:
        raise NothingToSummarize("Nothing to summarise: the branch you left has no messages of its own.")
    summary, details = await summarize_branch(messages, ops, complete, custom_instructions)
    # Session.move_to(leaf, summary=...) semantics, plus the file lists so a later summary keeps them
    return await session.append_branch_summary(summary, details=details)


async def fork_session(catalog: SessionCatalog, session: Session | BranchWriter, entry_id: str,
                       position: Literal["at", "before"]) -> tuple[SessionStorage, str | None]:
    """A new session holding root → entry ("at"), or root → the parent of a user message
    ("before", whose text comes back for the composer). The original is not touched."""
    entry = await session.get_entry(entry_id)
    if entry is None:
        raise EntryNotFoundError(entry_id)
    if position == "at":
        return await catalog.fork(session.session_id, entry_id), None
    if position != "before":
        raise ForkError(f"Fork position must be 'at' or 'before', not {position!r}.")
    if not (isinstance(entry, MessageEntry) and entry.message.role == "user"):
        raise ForkError("Fork before needs a user message; pick a prompt, or fork at this entry instead.")
    text = message_text(entry.message)
    if entry.parent_id is None:  # the first prompt: an empty session that still knows its parent
        meta = await session.storage.get_metadata()
        return await catalog.create(cwd=meta.cwd, parent_session_id=session.session_id), text
    return await catalog.fork(session.session_id, entry.parent_id), text
