"""Compaction planning (pure): token estimates, cut points, what to summarise (Pi 0.73.1's compaction/*.ts).

Nothing here talks to a model or writes an entry; `app/session/summarize.py` produces the text
and AgentSession appends the compaction entry. Cut points never separate a tool call from its
result: a kept range never starts at a toolResult.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from treechat.agent.types import AgentMessage
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContentBlock,
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


def _blocks_chars(content: str | Sequence[ContentBlock], image_chars: int = 0) -> int:
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content or []:
        if isinstance(block, TextContent):
            total += len(block.text)
        elif isinstance(block, ImageContent):
            total += image_chars
    return total


def estimate_tokens(message: AgentMessage) -> int:
    """chars/4 rounded up, counting what each role sends (Pi's estimateTokens; images in user
    messages count too)."""
    if isinstance(message, UserMessage):
        # Pi counts only a user message's text; an attached image costs about as much as one in a
        # tool result, and a small window must not be planned as if it were free
        chars = _blocks_chars(message.content, image_chars=4800)
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


def _usable_assistant(message: AgentMessage) -> TypeGuard[AssistantMessage]:
    return isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted")


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> tuple[int, int | None]:
    """(tokens, index of the last assistant whose real usage was used, or None)."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if _usable_assistant(msg) and calculate_context_tokens(msg.usage) > 0:
            trailing = sum(estimate_tokens(m) for m in messages[i + 1 :])
            return calculate_context_tokens(msg.usage) + trailing, i
    return sum(estimate_tokens(m) for m in messages), None


def should_compact(tokens: int, context_window: int, settings: CompactionSettings, reserve: int | None = None) -> bool:
    """Past the threshold: fewer than `reserve` tokens (default: the settings' reserve) left free."""
    reserve = settings.reserve_tokens if reserve is None else reserve
    return settings.enabled and tokens > context_window - reserve


# ---------------------------------------------------------------- fitting a window

SAFETY = 0.9  # chars/4 is an estimate: plan to fill at most this share of what is left
MIN_REPLY = 256  # the least room a reply is planned with


@dataclass(frozen=True)
class Budget:
    """How a compaction fits a context window of `window` tokens: `reply` tokens stay free for
    the answer, a summary takes at most `summary` tokens (a split turn's prefix summary half of
    that again), `overhead` is the system prompt and tool definitions, and `ratio` is how many
    of the provider's tokens one estimated token turned out to be (1 until a provider said)."""

    window: int
    reply: int
    summary: int
    overhead: int = 0
    ratio: float = 1.0

    @property
    def keep_tail(self) -> int:
        """Estimated tokens the kept messages may take after a compaction."""
        free = self.window - self.reply - self.summary * 3 // 2 - int(self.overhead * self.ratio)
        return max(0, int(free / self.ratio * SAFETY))

    @property
    def keep_tail_most(self) -> int:
        """The most the kept messages may take when the usual room is too little for the newest
        message: the reply keeps only its minimum (a small window is still usable with a long
        prompt in it, the reply being shorter)."""
        free = self.window - min(self.reply, MIN_REPLY) - self.summary - int(self.overhead * self.ratio)
        return max(0, int(free / self.ratio * SAFETY))

    @property
    def summary_input(self) -> int:
        """Estimated tokens of conversation one summary request may carry (besides its prompt)."""
        return max(0, int((self.window - self.summary) / self.ratio * SAFETY) - 600)


def compaction_budget(window: int, settings: CompactionSettings, overhead: int = 0, ratio: float = 1.0) -> Budget:
    """The budget for `window`; the settings' reserve and summary size hold for large windows and
    shrink to a share of a small one (a 16k reserve cannot leave anything of an 8k window)."""
    reply = min(settings.reserve_tokens, max(window // 4, MIN_REPLY))
    summary = min(int(0.8 * settings.reserve_tokens), max(window // 8, 256))
    return Budget(window=window, reply=reply, summary=summary, overhead=overhead, ratio=max(1.0, ratio))


# ---------------------------------------------------------------- cut points

_CUT_ROLES = {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}


def _role(entry: Entry) -> str | None:
    return entry.message.role if isinstance(entry, MessageEntry) else None


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
    return cut_at(entries, start, cut)


def cut_at(entries: Sequence[Entry], start: int, cut: int) -> CutPoint:
    """The cut that keeps entries[cut:], with the non-message entries just before it."""
    # Pull settings, labels and other non-message entries just before the cut into the kept part.
    while cut > start and not isinstance(entries[cut - 1], (MessageEntry, CompactionEntry)):
        cut -= 1
    if _role(entries[cut]) == "user":
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


def _entry_tokens(entry: Entry) -> int:
    message = None if isinstance(entry, CompactionEntry) else entry_to_message(entry)
    return estimate_tokens(message) if message is not None else 0


def _failed_reply(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage) and \
        entry.message.stop_reason in ("error", "aborted")


def fitting_cut_point(entries: Sequence[Entry], start: int, end: int, budget: int) -> int | None:
    """The earliest cut whose kept part is at most `budget` estimated tokens, preferring one at
    the start of a turn (a split turn costs a second summary request); None when even the last
    cut keeps more (a single message, or a turn's tail, larger than the budget)."""
    suffix = 0
    any_fit: int | None = None
    turn_fit: int | None = None
    # a failed reply is never sent: keeping only it would keep nothing of the turn
    cut_points = {i for i in find_valid_cut_points(entries, start, end) if not _failed_reply(entries[i])}
    for i in range(end - 1, start - 1, -1):
        suffix += _entry_tokens(entries[i])
        if suffix > budget:
            break
        if i in cut_points:
            any_fit = i
            if find_turn_start_index(entries, i, i) == i:
                turn_fit = i
    return turn_fit if turn_fit is not None else any_fit


# ---------------------------------------------------------------- preparation


@dataclass
class FileOps:
    read: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)

    def add_from(self, message: AgentMessage) -> None:
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
    messages_to_summarize: list[AgentMessage]
    turn_prefix_messages: list[AgentMessage]
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


class TooLargeToCompact(NothingToCompact):
    """The newest message alone does not fit the budget: no compaction can make room for it."""

    def __init__(self, message: str, *, tokens: int, role: str) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.role = role


def _messages_of(entries: Sequence[Entry]) -> list[AgentMessage]:
    # Like the context conversion, but compaction entries inside the range are skipped.
    return [m for e in entries if not isinstance(e, CompactionEntry) and (m := entry_to_message(e)) is not None]


def prepare_compaction(path: Sequence[Entry], context_messages: Sequence[AgentMessage], settings: CompactionSettings, *,
                       tail_budget: int | None = None, keep_last_turn: bool = False) -> CompactionPlan:
    """What to summarise on `path` (root-first, the whole branch). Raises NothingToCompact.

    `tail_budget` caps the estimated tokens kept after the summary (so the result fits a small
    window); TooLargeToCompact when even the newest message alone is over it. `keep_last_turn`
    (manual /compact): when the usual tail would keep everything, keep only the last turn."""
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
    keep = settings.keep_recent_tokens if tail_budget is None else min(settings.keep_recent_tokens, tail_budget)
    cut = find_cut_point(path, boundary, len(path), keep)
    if tail_budget is not None and sum(_entry_tokens(e) for e in path[cut.first_kept_index:]) > tail_budget:
        fit = fitting_cut_point(path, boundary, len(path), tail_budget)
        if fit is None:
            raise _too_large(path, boundary)
        cut = cut_at(path, boundary, fit)
    to_summarize, prefix = _ranges(path, boundary, cut)
    if not to_summarize and not prefix and keep_last_turn:
        turn = find_turn_start_index(path, len(path) - 1, boundary)
        if turn > boundary:
            cut = cut_at(path, boundary, turn)
            to_summarize, prefix = _ranges(path, boundary, cut)
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


def _ranges(path: Sequence[Entry], boundary: int, cut: CutPoint) -> tuple[list[AgentMessage], list[AgentMessage]]:
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _messages_of(path[boundary:history_end])
    prefix = _messages_of(path[cut.turn_start_index : cut.first_kept_index]) if cut.is_split_turn else []
    return to_summarize, prefix


def _too_large(path: Sequence[Entry], boundary: int) -> TooLargeToCompact:
    # the biggest message of the last turn's tail is the one that cannot fit
    last_cut = max((i for i in find_valid_cut_points(path, boundary, len(path)) if not _failed_reply(path[i])),
                   default=boundary)
    biggest = max(path[last_cut:], key=_entry_tokens)
    tokens = _entry_tokens(biggest)
    role = _role(biggest) or biggest.type
    return TooLargeToCompact(f"Nothing to compact: the newest {role} message alone is about {tokens:,} tokens.",
                             tokens=tokens, role=role)
