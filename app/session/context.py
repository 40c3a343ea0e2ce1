"""Folding a path of entries into what the model sees (Pi's buildSessionContext).

Settings (model, thinking level, active tools) accumulate along the whole path — the storage
keeps them as `PathState` — while messages come from the path after the compaction transform:
the last compaction on the path replaces everything before its kept range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from treechat.agent.types import AgentMessage
from treechat.storage.base import PathState
from treechat.storage.model import (
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    dump,
    iso_to_ms,
)


@dataclass
class SessionContext:
    messages: list[AgentMessage] = field(default_factory=list)
    thinking_level: str = "off"
    model: dict[str, str] | None = None
    active_tool_names: list[str] | None = None

    def to_json(self) -> dict[str, object]:
        """Pi's shape: {messages, thinkingLevel, model} plus our activeToolNames."""
        return {
            "messages": [dump(m) for m in self.messages],
            "thinkingLevel": self.thinking_level,
            "model": self.model,
            "activeToolNames": self.active_tool_names,
        }


def entry_to_message(entry: Entry) -> AgentMessage | None:
    """The message an entry contributes to the context, or None (settings, labels, ...)."""
    if isinstance(entry, MessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        message = CustomMessage(custom_type=entry.custom_type, content=entry.content, display=entry.display,
                                timestamp=iso_to_ms(entry.timestamp))
        if entry.details is not None:  # set only when there are some: the message's JSON has no "details": null
            message.details = entry.details
        return message
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        return BranchSummaryMessage(
            summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)
        )
    return None


def compaction_message(entry: CompactionEntry) -> CompactionSummaryMessage:
    return CompactionSummaryMessage(
        summary=entry.summary,
        tokens_before=entry.tokens_before,
        timestamp=iso_to_ms(entry.timestamp),
    )


def transform_path(path: Sequence[Entry]) -> list[Entry]:
    """The entries that count after the last compaction C on the path (Pi's projection):
    with `retainedTail`: [C, after C...]; else [C, from firstKeptEntryId up to C..., after C...]."""
    last = _last_compaction(path)
    return list(path) if last is None else _after_compaction(path, last)


def _last_compaction(path: Sequence[Entry]) -> int | None:
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], CompactionEntry):
            return i
    return None


def _after_compaction(path: Sequence[Entry], last: int) -> list[Entry]:
    comp = path[last]
    assert isinstance(comp, CompactionEntry)
    kept: list[Entry] = []
    if not comp.retained_tail:
        start = next(
            (i for i in range(last) if path[i].id == comp.first_kept_entry_id), None
        )
        if start is not None:
            kept = list(path[start:last])
    return [comp, *kept, *path[last + 1 :]]


def build_context(path: Sequence[Entry], state: PathState) -> SessionContext:
    """The context at the end of `path` (root-first; may start at a compaction's kept range)."""
    last = _last_compaction(path)
    projected = path if last is None else _after_compaction(path, last)  # (only read: no copy)
    messages: list[AgentMessage] = []
    append = messages.append
    for i, entry in enumerate(projected):
        if isinstance(entry, MessageEntry):  # nearly every entry: no call for it
            append(entry.message)
        elif i == 0 and isinstance(entry, CompactionEntry):
            append(compaction_message(entry))
        elif (msg := entry_to_message(entry)) is not None:
            append(msg)
    return SessionContext(
        messages=messages,
        thinking_level=state.thinking_level,
        model=dict(state.model) if state.model else None,
        active_tool_names=list(state.active_tool_names) if state.active_tool_names is not None else None,
    )
