"""Pure functions every backend shares: how one entry changes the aggregates, previews.

SQLite applies them incrementally on append (so opening replays nothing); the in-memory index
applies them while walking. Keeping one definition keeps the backends in agreement.
"""

from __future__ import annotations

from dataclasses import replace

from .base import PathState, SessionStats, TreeRow
from .model import (
    ActiveToolsChangeEntry,
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    TextContent,
    ThinkingLevelChangeEntry,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

PREVIEW_CHARS = 120


def advance_path_state(state: PathState, entry: Entry) -> PathState:
    """The PathState at `entry`, given the state at its parent."""
    if isinstance(entry, MessageEntry):
        msg = entry.message
        if isinstance(msg, AssistantMessage):
            u = msg.usage
            return replace(
                state,
                depth=state.depth + 1,
                message_count=state.message_count + 1,
                input_tokens=state.input_tokens + u.input,
                output_tokens=state.output_tokens + u.output,
                cache_read_tokens=state.cache_read_tokens + u.cache_read,
                cache_write_tokens=state.cache_write_tokens + u.cache_write,
                cost_total=state.cost_total + u.cost.total,
                context_tokens=context_tokens_of(msg) or state.context_tokens,
                model={"provider": msg.provider, "modelId": msg.model},
            )
        return replace(state, depth=state.depth + 1, message_count=state.message_count + 1)
    if isinstance(entry, ThinkingLevelChangeEntry):
        return replace(state, depth=state.depth + 1, thinking_level=entry.thinking_level)
    if isinstance(entry, ModelChangeEntry):
        model = {"provider": entry.provider, "modelId": entry.model_id}
        return replace(state, depth=state.depth + 1, model=model)
    if isinstance(entry, ActiveToolsChangeEntry):
        tools = list(entry.active_tool_names)
        return replace(state, depth=state.depth + 1, active_tool_names=tools)
    return replace(state, depth=state.depth + 1)


def context_tokens_of(msg: AssistantMessage) -> int:
    """Tokens the model saw plus what it wrote, as Pi's calculateContextTokens (0 for failures)."""
    if msg.stop_reason in ("error", "aborted"):
        return 0
    u = msg.usage
    return u.total_tokens or (u.input + u.output + u.cache_read + u.cache_write)


def advance_stats(stats: SessionStats, entry: Entry) -> SessionStats:
    """Whole-session aggregates after appending `entry`."""
    stats = replace(stats, entry_count=stats.entry_count + 1)
    if not isinstance(entry, MessageEntry):
        return stats
    msg = entry.message
    stats = replace(stats, message_count=stats.message_count + 1)
    if isinstance(msg, UserMessage):
        return replace(stats, user_messages=stats.user_messages + 1)
    if isinstance(msg, ToolResultMessage):
        return replace(stats, tool_results=stats.tool_results + 1)
    if isinstance(msg, AssistantMessage):
        u = msg.usage
        return replace(
            stats,
            assistant_messages=stats.assistant_messages + 1,
            input_tokens=stats.input_tokens + u.input,
            output_tokens=stats.output_tokens + u.output,
            cache_read_tokens=stats.cache_read_tokens + u.cache_read,
            cache_write_tokens=stats.cache_write_tokens + u.cache_write,
            total_tokens=stats.total_tokens + (u.total_tokens or u.input + u.output + u.cache_read + u.cache_write),
            cost_total=stats.cost_total + u.cost.total,
        )
    return stats


def entry_role(entry: Entry) -> str | None:
    return getattr(entry.message, "role", None) if isinstance(entry, MessageEntry) else None


def entry_text(entry: Entry) -> str:
    """The searchable text of an entry (what a person would look for)."""
    if isinstance(entry, MessageEntry):
        msg = entry.message
        parts = [message_text(msg)]
        content = getattr(msg, "content", None)
        if isinstance(content, list):
            for block in content:
                if isinstance(block, ToolCall):
                    parts.append(f"{block.name} {block.arguments}")
                elif getattr(block, "type", None) == "thinking":
                    parts.append(getattr(block, "thinking", ""))
        if isinstance(msg, ToolResultMessage):
            parts.insert(0, msg.tool_name)
        return "\n".join(p for p in parts if p)
    if isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
        return entry.summary
    if isinstance(entry, CustomMessageEntry):
        c = entry.content
        return c if isinstance(c, str) else "\n".join(b.text for b in c if isinstance(b, TextContent))
    if isinstance(entry, LabelEntry):
        return entry.label or ""
    if isinstance(entry, SessionInfoEntry):
        return entry.name or ""
    return ""


def entry_preview(entry: Entry) -> str:
    """One line for the tree: the first non-empty line of the text, or what the entry did."""
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f"thinking: {entry.thinking_level}"
    if isinstance(entry, ModelChangeEntry):
        return f"model: {entry.provider}/{entry.model_id}"
    if isinstance(entry, ActiveToolsChangeEntry):
        return "tools: " + (", ".join(entry.active_tool_names) or "none")
    if isinstance(entry, LabelEntry):
        return f"label {entry.target_id}: {entry.label or '(cleared)'}"
    if isinstance(entry, SessionInfoEntry):
        return f"name: {entry.name or '(cleared)'}"
    if isinstance(entry, MessageEntry):
        msg = entry.message
        if isinstance(msg, AssistantMessage):
            text = message_text(msg).strip()
            if not text:
                calls = [b.name for b in msg.content if isinstance(b, ToolCall)]
                text = ("→ " + ", ".join(calls)) if calls else (msg.error_message or f"({msg.stop_reason})")
            return _first_line(text)
        if isinstance(msg, ToolResultMessage):
            return _first_line(f"{msg.tool_name}: {message_text(msg).strip()}")
    return _first_line(entry_text(entry).strip())


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:PREVIEW_CHARS]
    return ""


def tree_row(entry: Entry, label: str | None = None) -> TreeRow:
    return TreeRow(
        id=entry.id,
        parent_id=entry.parent_id,
        type=entry.type,
        role=entry_role(entry),
        preview=entry_preview(entry),
        timestamp=entry.timestamp,
        label=label,
    )
