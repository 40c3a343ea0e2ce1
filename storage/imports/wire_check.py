"""A batch of entry lines proven valid without pydantic: the import's fast path (issue 26).

An import keeps each line's own bytes, so pydantic's models of them are built only to be thrown
away: for a 100k-entry file that was 2-2.5 s of CPU, the biggest cost of the import after the
search index. Here the same batch is decoded by msgspec into structs that mirror `model.py`
field for field but are **stricter**: no unknown keys (a key pydantic would read by its
Python name, `parent_id`, is unknown here), no lax values (`"5"` for an int, `1` for a bool),
no unknown entry type, role or block type. So a batch msgspec accepts is one pydantic accepts;
any other batch (one bad or merely unusual line) goes through pydantic as before, which says
which lines are bad. Wrong answers can only be "not proven", never "valid" for a line pydantic
refuses: `tests/storage/test_wire_check.py` holds the two schemas to the same fields and tries
lines pydantic refuses.

Keys Pi writes that `model.py` keeps as extras (`thinkingSignature`, `responseId`, …) are
declared here as anything (`object`), as pydantic's `extra="allow"` takes them.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct


class _Strict(Struct, rename="camel", forbid_unknown_fields=True, kw_only=True, gc=False):
    pass


Millis = int | float
Id = Annotated[str, Meta(min_length=1)]


# ---------------------------------------------------------------- content blocks


class TextBlock(_Strict, kw_only=True, tag_field="type", tag="text"):
    text: str
    text_signature: object = None


class ThinkingBlock(_Strict, kw_only=True, tag_field="type", tag="thinking"):
    thinking: str
    thinking_signature: object = None
    redacted: object = None


class ImageBlock(_Strict, kw_only=True, tag_field="type", tag="image"):
    data: str
    mime_type: str


class ToolCallBlock(_Strict, kw_only=True, tag_field="type", tag="toolCall"):
    id: str
    name: str
    arguments: dict[str, object] = {}
    arguments_error: str | None = None
    thought_signature: object = None
    partial_json: object = None


Block = TextBlock | ThinkingBlock | ImageBlock | ToolCallBlock


class Cost(_Strict, kw_only=True):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Strict, kw_only=True):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = msgspec.field(default_factory=Cost)


# ---------------------------------------------------------------- messages


class UserMessage(_Strict, kw_only=True, tag_field="role", tag="user"):
    content: str | list[Block]
    timestamp: Millis = 0


class AssistantMessage(_Strict, kw_only=True, tag_field="role", tag="assistant"):
    content: list[Block] = []
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)
    stop_reason: Literal["stop", "length", "toolUse", "error", "aborted"] = "stop"
    error_message: str | None = None
    error_kind: Literal["auth", "billing", "not_found", "bad_request", "overflow", "rate_limited", "overloaded", "server",
                        "transport", "timeout", "protocol", "aborted", "limit"] | None = None
    timestamp: Millis = 0
    response_model: object = None
    response_id: object = None
    diagnostics: object = None


class ToolResultMessage(_Strict, kw_only=True, tag_field="role", tag="toolResult"):
    tool_call_id: str
    tool_name: str
    content: list[Block] = []
    details: object = None
    is_error: bool = False
    timestamp: Millis = 0
    usage: Usage | None = None


class BashExecutionMessage(_Strict, kw_only=True, tag_field="role", tag="bashExecution"):
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: Millis = 0


class CustomMessage(_Strict, kw_only=True, tag_field="role", tag="custom"):
    custom_type: str
    content: str | list[Block]
    display: bool = True
    details: object = None
    timestamp: Millis = 0


class BranchSummaryMessage(_Strict, kw_only=True, tag_field="role", tag="branchSummary"):
    summary: str
    from_id: str
    timestamp: Millis = 0


class CompactionSummaryMessage(_Strict, kw_only=True, tag_field="role", tag="compactionSummary"):
    summary: str
    tokens_before: int
    timestamp: Millis = 0


Message = (UserMessage | AssistantMessage | ToolResultMessage | BashExecutionMessage | CustomMessage
           | BranchSummaryMessage | CompactionSummaryMessage)


# ---------------------------------------------------------------- entries


class _Entry(_Strict, tag_field="type"):
    id: Id
    parent_id: str | None
    timestamp: str = ""


class MessageEntry(_Entry, kw_only=True, tag="message"):
    message: Message


class ThinkingLevelChangeEntry(_Entry, kw_only=True, tag="thinking_level_change"):
    thinking_level: str


class ModelChangeEntry(_Entry, kw_only=True, tag="model_change"):
    provider: str
    model_id: str


class ActiveToolsChangeEntry(_Entry, kw_only=True, tag="active_tools_change"):
    active_tool_names: list[str]


class CompactionEntry(_Entry, kw_only=True, tag="compaction"):
    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int = 0
    tokens_after: int | None = None
    retained_tail: bool | None = None
    trigger: str | None = None
    details: object = None
    from_hook: bool | None = None


class BranchSummaryEntry(_Entry, kw_only=True, tag="branch_summary"):
    from_id: str
    summary: str
    details: object = None
    from_hook: bool | None = None


class CustomEntry(_Entry, kw_only=True, tag="custom"):
    custom_type: str
    data: object = None
    active_tool_names: list[str] | None = None


class CustomMessageEntry(_Entry, kw_only=True, tag="custom_message"):
    custom_type: str
    content: str | list[Block]
    display: bool = True
    details: object = None


class LabelEntry(_Entry, kw_only=True, tag="label"):
    target_id: str
    label: str | None = None


class SessionInfoEntry(_Entry, kw_only=True, tag="session_info"):
    name: str | None = None


class LeafEntry(_Entry, kw_only=True, tag="leaf"):
    target_id: str | None


Entry = (MessageEntry | ThinkingLevelChangeEntry | ModelChangeEntry | ActiveToolsChangeEntry | CompactionEntry
         | BranchSummaryEntry | CustomEntry | CustomMessageEntry | LabelEntry | SessionInfoEntry | LeafEntry)

ENTRY_STRUCTS: tuple[type[_Strict], ...] = (
    MessageEntry, ThinkingLevelChangeEntry, ModelChangeEntry, ActiveToolsChangeEntry, CompactionEntry,
    BranchSummaryEntry, CustomEntry, CustomMessageEntry, LabelEntry, SessionInfoEntry, LeafEntry,
)

_batch = msgspec.json.Decoder(list[Entry])

# pydantic refuses JSON nested 200 deep (msgspec goes further); a line with fewer brackets than
# this, strings included, cannot come near it. One with more is left to pydantic (`deep`).
_SHALLOW = 128


def deep(line: bytes) -> bool:
    """Could this line nest too deep for pydantic? (Counted roughly: every bracket.)"""
    return line.count(b"[") + line.count(b"{") >= _SHALLOW


def proven_valid(lines: list[bytes]) -> bool:
    """True when every line is certainly an entry `model.parse_entry` accepts, deep ones (`deep`)
    aside: the caller has pydantic look at those. False says nothing (the caller asks pydantic)."""
    return proven_valid_array(b"[" + b",".join(lines) + b"]")


def proven_valid_array(array: bytes) -> bool:
    """proven_valid of the lines already joined as one JSON array (the import joins them once for
    the proof and the views)."""
    try:
        _batch.decode(array)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError):
        return False
    return True
