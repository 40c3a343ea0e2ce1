"""A validated entry's view (views.EntryView) made from its pydantic model: a line whose view cannot
be decoded but that pydantic accepts (a lax number such as "5" for an int), and the entries built
in Python. Apart from views.py so that module imports no pydantic (on_demand.view_of_entry loads
this on its first call); callers that hold many models already import `view_of_model` directly.
"""

from __future__ import annotations

from .model import (
    ActiveToolsChangeEntry,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    ImageContent,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    TextContent,
    ThinkingContent,
    ThinkingLevelChangeEntry,
    ToolCall,
    ToolResultMessage,
    UnknownContent,
)
from .views import Block, Cost, EntryView, MessageView, Usage


def _blocks(content: object) -> str | list[Block] | None:
    if isinstance(content, str) or content is None:
        return content
    if not isinstance(content, list):  # a message of a role we do not know may carry anything (kept as it is)
        return None
    out = []
    for b in content:
        if isinstance(b, TextContent):
            out.append(Block(type="text", text=b.text))
        elif isinstance(b, ThinkingContent):
            out.append(Block(type="thinking", thinking=b.thinking))
        elif isinstance(b, ToolCall):
            out.append(Block(type="toolCall", name=b.name, arguments=b.arguments))
        elif isinstance(b, (ImageContent, UnknownContent)):
            out.append(Block(type=b.type))
    return out


def _message_view(msg: object) -> MessageView:
    view = MessageView(role=getattr(msg, "role", None), content=_blocks(getattr(msg, "content", None)))
    ts = getattr(msg, "timestamp", None)
    view.timestamp = ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
    if isinstance(msg, AssistantMessage):
        u = msg.usage
        view.usage = Usage(u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, Cost(u.cost.total))
        view.stop_reason, view.provider, view.model = msg.stop_reason, msg.provider, msg.model
        view.error_message = msg.error_message
    elif isinstance(msg, ToolResultMessage):
        view.tool_name = msg.tool_name
        if msg.usage is not None:
            u = msg.usage
            view.usage = Usage(u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, Cost(u.cost.total))
    elif isinstance(msg, (BranchSummaryMessage, CompactionSummaryMessage)):
        view.summary = msg.summary
    elif isinstance(msg, BashExecutionMessage):
        view.command, view.output = msg.command, msg.output
    return view


def view_of_model(entry: Entry) -> EntryView:
    """The view of a validated entry (same fields a decoded line would give); views.view_of_entry
    hands it on for the modules that start without pydantic."""
    view = EntryView(type=entry.type, id=entry.id, parent_id=entry.parent_id, timestamp=entry.timestamp)
    if isinstance(entry, MessageEntry):
        view.message = _message_view(entry.message)
    elif isinstance(entry, (LabelEntry, LeafEntry)):
        view.target_id = entry.target_id
        if isinstance(entry, LabelEntry):
            view.label = entry.label
    elif isinstance(entry, SessionInfoEntry):
        view.name = entry.name
    elif isinstance(entry, CompactionEntry):
        view.summary, view.first_kept_entry_id = entry.summary, entry.first_kept_entry_id
        view.retained_tail = entry.retained_tail
    elif isinstance(entry, BranchSummaryEntry):
        view.summary = entry.summary
    elif isinstance(entry, ThinkingLevelChangeEntry):
        view.thinking_level = entry.thinking_level
    elif isinstance(entry, ModelChangeEntry):
        view.provider, view.model_id = entry.provider, entry.model_id
    elif isinstance(entry, ActiveToolsChangeEntry):
        view.active_tool_names = list(entry.active_tool_names)
    elif isinstance(entry, CustomEntry) and entry.active_tool_names is not None:  # a tools record from a Pi file
        view.active_tool_names = list(entry.active_tool_names)
    elif isinstance(entry, CustomMessageEntry):
        view.content = _blocks(entry.content)
    return view
