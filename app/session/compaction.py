"""Compaction planning (pure): token estimates, cut points, what to summarise (Pi §7).

Nothing here talks to a model or writes an entry; `app/session/summarize.py` produces the text
and AgentSession appends the compaction entry. Cut points never separate a tool call from its
result: a kept range never starts at a toolResult.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    CustomMessageEntry,
    Entry,
    ImageContent,
    MessageEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

from .context import entry_to_message


@dataclass(frozen=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


# ---------------------------------------------------------------- token estimates


def calculate_context_tokens(usage: Usage) -> int:
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def _blocks_chars(content: Any, image_chars: int = 0) -> int:
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content or []:
        if isinstance(block, TextContent):
            total += len(block.text)
        elif isinstance(block, ImageContent):
            total += image_chars
    return total


def estimate_tokens(message: Any) -> int:
    """chars/4 rounded up, counting what each role sends (Pi's estimateTokens)."""
    if isinstance(message, UserMessage):
        chars = _blocks_chars(message.content)
    elif isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(json.dumps(block.arguments, separators=(",", ":")))
    elif isinstance(message, (CustomMessage, ToolResultMessage)):
        chars = _blocks_chars(message.content, image_chars=4800)
    elif isinstance(message, BashExecutionMessage):
        chars = len(message.command) + len(message.output)
    elif isinstance(message, (BranchSummaryMessage, CompactionSummaryMessage)):
        chars = len(message.summary)
    else:
        chars = 0
    return math.ceil(chars / 4)


def _usable_assistant(message: Any) -> bool:
    return isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted")


def estimate_context_tokens(messages: Sequence[Any]) -> tuple[int, int | None]:
    """(tokens, index of the last assistant whose real usage was used, or None)."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if _usable_assistant(msg) and calculate_context_tokens(msg.usage) > 0:
            trailing = sum(estimate_tokens(m) for m in messages[i + 1 :])
            return calculate_context_tokens(msg.usage) + trailing, i
    return sum(estimate_tokens(m) for m in messages), None


def should_compact(tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    return settings.enabled and tokens > context_window - settings.reserve_tokens


# ---------------------------------------------------------------- cut points

_CUT_ROLES = {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}


def _role(entry: Entry) -> str | None:
    return getattr(entry.message, "role", None) if isinstance(entry, MessageEntry) else None


def find_valid_cut_points(entries: Sequence[Entry], start: int, end: int) -> list[int]:
    return [
        i
        for i in range(start, end)
        if _role(entries[i]) in _CUT_ROLES or isinstance(entries[i], (BranchSummaryEntry, CustomMessageEntry))
    ]


def find_turn_start_index(entries: Sequence[Entry], idx: int, start: int) -> int:
    for i in range(idx, start - 1, -1):
        e = entries[i]
        if isinstance(e, (BranchSummaryEntry, CustomMessageEntry)) or _role(e) in ("user", "bashExecution"):
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(entries: Sequence[Entry], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    cut_points = find_valid_cut_points(entries, start, end)
    if not cut_points:
        return CutPoint(start, -1, False)
    cut = cut_points[0]
    total = 0
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if not isinstance(entry, MessageEntry):
            continue
        total += estimate_tokens(entry.message)
        if total >= keep_recent_tokens:
            cut = next((c for c in cut_points if c >= i), cut_points[0])
            break
    # Pull settings, labels and other non-message entries just before the cut into the kept part.
    while cut > start and not isinstance(entries[cut - 1], (MessageEntry, CompactionEntry)):
        cut -= 1
    if _role(entries[cut]) == "user":
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


# ---------------------------------------------------------------- preparation


@dataclass
class FileOps:
    read: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)

    def add_from(self, message: Any) -> None:
        if not isinstance(message, AssistantMessage):
            return
        for block in message.content:
            if isinstance(block, ToolCall):
                path = block.arguments.get("path") if isinstance(block.arguments, dict) else None
                if not isinstance(path, str):
                    continue
                if block.name == "read":
                    self.read.add(path)
                elif block.name in ("write", "edit"):
                    self.modified.add(path)

    def details(self) -> dict[str, list[str]]:
        return {"readFiles": sorted(self.read - self.modified), "modifiedFiles": sorted(self.modified)}


@dataclass
class CompactionPlan:
    first_kept_entry_id: str
    messages_to_summarize: list[Any]
    turn_prefix_messages: list[Any]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOps
    covered_from_id: str | None  # first entry summarised (for the card and the "originals" view)
    covered_to_id: str | None  # last entry summarised


class CompactionError(Exception):
    """Compaction did not happen; the message is one sentence for a person."""


class NothingToCompact(CompactionError):
    """The path is already compacted at its end, or too small to summarise."""


def _messages_of(entries: Sequence[Entry]) -> list[Any]:
    # Like the context conversion, but compaction entries inside the range are skipped.
    return [m for e in entries if not isinstance(e, CompactionEntry) and (m := entry_to_message(e)) is not None]


def prepare_compaction(path: Sequence[Entry], context_messages: Sequence[Any], settings: CompactionSettings) -> CompactionPlan:
    """What to summarise on `path` (root-first, the whole branch). Raises NothingToCompact."""
    if not path:
        raise NothingToCompact("Nothing to compact (session too small)")
    if isinstance(path[-1], CompactionEntry):
        raise NothingToCompact("Already compacted")
    prev_index = next((i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), None)
    previous_summary = None
    boundary = 0
    file_ops = FileOps()
    if prev_index is not None:
        prev = path[prev_index]
        assert isinstance(prev, CompactionEntry)
        previous_summary = prev.summary
        boundary = next((i for i in range(len(path)) if path[i].id == prev.first_kept_entry_id), prev_index + 1)
        if not prev.from_hook and isinstance(prev.details, dict):
            file_ops.read.update(p for p in prev.details.get("readFiles", []) if isinstance(p, str))
            file_ops.modified.update(p for p in prev.details.get("modifiedFiles", []) if isinstance(p, str))
    tokens_before, _ = estimate_context_tokens(context_messages)
    cut = find_cut_point(path, boundary, len(path), settings.keep_recent_tokens)
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _messages_of(path[boundary:history_end])
    prefix = _messages_of(path[cut.turn_start_index : cut.first_kept_index]) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        raise NothingToCompact("Nothing to compact (session too small)")
    for msg in [*to_summarize, *prefix]:
        file_ops.add_from(msg)
    covered = path[boundary : cut.first_kept_index]
    return CompactionPlan(
        first_kept_entry_id=path[cut.first_kept_index].id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=file_ops,
        covered_from_id=covered[0].id if covered else None,
        covered_to_id=covered[-1].id if covered else None,
    )
