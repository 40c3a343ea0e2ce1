"""The persisted vocabulary: content blocks, messages, usage and the session entries.

JSON uses Pi's camelCase names (so Pi session files round-trip); Python attributes are snake_case.
Every model keeps unknown fields (``extra="allow"``) and serialises with :func:`dump`, which writes
exactly the fields that were given — Pi omits keys whose value is undefined, and so do we (which
fields count as given: storage/model_base.py).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from .json_types import JsonObject
from .model_base import WIRE, Model
from .model_lite import InvalidEntryError as InvalidEntryError
from .model_lite import iso_to_ms as iso_to_ms
from .model_lite import new_entry_id as new_entry_id
from .model_lite import new_session_id as new_session_id
from .model_lite import now_iso as now_iso
from .model_lite import now_ms as now_ms


def dump(obj: BaseModel) -> JsonObject:
    """The JSON-ready dict of a model: camelCase, only the fields that were set."""
    return obj.model_dump(mode="json", by_alias=True, exclude_unset=True)


# ---------------------------------------------------------------- content blocks


class TextContent(Model):
    type: Literal["text"] = "text"
    text: str


class ThinkingContent(Model):
    type: Literal["thinking"] = "thinking"
    thinking: str


class ImageContent(Model):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(Model):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)  # the agent reads them as Json
    # Set by a provider adapter when the model's arguments were not a JSON object: why, with the
    # text. The loop answers such a call with an error result; never stored (the arguments keep
    # the text, so the session shows what the model wrote).
    arguments_error: str | None = Field(default=None, exclude=True)


class UnknownContent(Model):
    """A block type we do not know (kept verbatim so the file round-trips)."""

    type: str

    @field_validator("type")
    @classmethod
    def _not_known(cls, value: str) -> str:
        return _refuse_known(value, _BLOCK_TYPES)


def _refuse_known(value: str, known: set[str]) -> str:
    if value in known:
        raise ValueError(f"'{value}' is a known kind; its own fields are invalid")
    return value


_BLOCK_TYPES = {"text", "thinking", "image", "toolCall"}

# A tag-discriminated union (resolved inside pydantic-core, no Python call per object) with the
# "unknown" model as a left-to-right fallback; the fallback refuses known tags, so a malformed
# known block is an error naming its field rather than an unknown block.
ContentBlock = Annotated[
    Annotated[TextContent | ThinkingContent | ImageContent | ToolCall, Field(discriminator="type")] | UnknownContent,
    Field(union_mode="left_to_right"),
]


# ---------------------------------------------------------------- usage


class Cost(Model):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(Model):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)


Millis = int | float  # epoch milliseconds, as JavaScript's Date.now()
StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
# Why a reply stopped with an error (treechat's own field, `errorKind`; Pi reads past it): what
# the provider layer made of the failure (treechat.llm.errors.ProviderError.kind)
ErrorKind = Literal[
    "auth",
    "billing",
    "not_found",
    "bad_request",
    "overflow",  # the context did not fit: compaction reads it
    "rate_limited",
    "overloaded",
    "server",
    "transport",
    "timeout",
    "protocol",
    "aborted",
    "limit",  # a bound of ours was reached (the reply's size): not retried
]


# ---------------------------------------------------------------- messages


class UserMessage(Model):
    role: Literal["user"] = "user"
    content: str | list[ContentBlock]
    timestamp: Millis = Field(default_factory=now_ms)


class AssistantMessage(Model):
    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock] = Field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    error_kind: ErrorKind | None = None
    timestamp: Millis = Field(default_factory=now_ms)


class ToolResultMessage(Model):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ContentBlock] = Field(default_factory=list)
    details: object = None
    is_error: bool = False
    timestamp: Millis = Field(default_factory=now_ms)
    # what a sub-agent (the `task` tool) spent on its own requests: treechat's own field (Pi reads
    # past it), counted in the path's and the session's tokens and cost like a reply's usage
    usage: Usage | None = None


class BashExecutionMessage(Model):
    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: Millis = Field(default_factory=now_ms)


class CustomMessage(Model):
    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[ContentBlock]
    display: bool = True
    details: Any = None  # handed on as the agent's Json
    timestamp: Millis = Field(default_factory=now_ms)


class BranchSummaryMessage(Model):
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: Millis = Field(default_factory=now_ms)


class CompactionSummaryMessage(Model):
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: Millis = Field(default_factory=now_ms)


class UnknownMessage(Model):
    """A role this version does not know: kept verbatim, never sent to a model."""

    role: str

    @field_validator("role")
    @classmethod
    def _not_known(cls, value: str) -> str:
        return _refuse_known(value, _ROLES)


_ROLES = {
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
}

Message = Annotated[
    Annotated[UserMessage | AssistantMessage | ToolResultMessage | BashExecutionMessage | CustomMessage | BranchSummaryMessage | CompactionSummaryMessage, Field(discriminator="role")] | UnknownMessage,
    Field(union_mode="left_to_right"),
]


# Every message model (the Python type of what `Message` validates to)
AnyMessage = (UserMessage | AssistantMessage | ToolResultMessage | BashExecutionMessage | CustomMessage
              | BranchSummaryMessage | CompactionSummaryMessage | UnknownMessage)


def message_text(message: object) -> str:
    """All plain text of a message (text blocks joined by newlines; summaries; bash command+output)."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    if isinstance(message, (BranchSummaryMessage, CompactionSummaryMessage)):
        return message.summary
    if isinstance(message, BashExecutionMessage):
        return f"{message.command}\n{message.output}"
    return ""


# ---------------------------------------------------------------- entries


class EntryBase(Model):
    id: str = Field(min_length=1)
    parent_id: str | None
    timestamp: str = Field(default_factory=now_iso)


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: Message


class ThinkingLevelChangeEntry(EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class ActiveToolsChangeEntry(EntryBase):
    type: Literal["active_tools_change"] = "active_tools_change"
    active_tool_names: list[str]


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int = 0
    tokens_after: int | None = None
    retained_tail: bool | None = None
    trigger: str | None = None
    details: object = None
    from_hook: bool | None = None


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    summary: str
    details: object = None
    from_hook: bool | None = None


# A tools record in a Pi file: Pi 0.73.1 shows an `active_tools_change` as an empty row of its
# tree, and hides a `custom` entry there; so an export writes the record as a `custom` entry of
# this type carrying `activeToolNames`, which every reader here takes as the record itself.
TOOLS_RECORD = "treechat.active_tools"


class CustomEntry(EntryBase):
    type: Literal["custom"] = "custom"
    custom_type: str
    data: object = None
    active_tool_names: list[str] | None = None  # a tools record (TOOLS_RECORD) written for Pi


class CustomMessageEntry(EntryBase):
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[ContentBlock]
    display: bool = True
    details: object = None


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


class LeafEntry(EntryBase):
    """Navigation marker: the leaf moved to ``target_id`` (None = before the first entry).

    Its parent is the target, so a reader that takes the last line as the leaf (Pi) builds the
    same context; it carries no content and is never on anyone's path but its own.
    """

    type: Literal["leaf"] = "leaf"
    target_id: str | None


class UnknownEntry(EntryBase):
    """An entry type from a newer writer: kept in the tree and written back verbatim."""

    type: str

    @field_validator("type")
    @classmethod
    def _not_known(cls, value: str) -> str:
        return _refuse_known(value, _ENTRY_TYPE_SET)


# The 11 entry types, listed once: the validated union, the Python type and the tag names
# all come from this union.
KnownEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | ActiveToolsChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | LeafEntry
)
ENTRY_TYPES = tuple(cls.model_fields["type"].default for cls in get_args(KnownEntry))
_ENTRY_TYPE_SET = set(ENTRY_TYPES)

SessionEntry = Annotated[
    Annotated[KnownEntry, Field(discriminator="type")] | UnknownEntry,
    Field(union_mode="left_to_right"),
]

Entry = KnownEntry | UnknownEntry

_entry_adapter: TypeAdapter[Entry] = TypeAdapter(SessionEntry)
_message_adapter: TypeAdapter[AnyMessage] = TypeAdapter(Message)
_entries_adapter: TypeAdapter[list[Entry]] = TypeAdapter(list[SessionEntry])


def _explain(err: ValidationError, what: str, data: object, first_index: int = 0) -> InvalidEntryError:
    first = err.errors()[0]
    parts = _real_path(first["loc"], data)
    if first_index and parts and parts[0].isdigit():  # a part of a longer array: its index in the whole
        parts[0] = str(int(parts[0]) + first_index)
    loc = ".".join(parts) or "(root)"
    return InvalidEntryError(f"invalid {what}: field '{loc}': {first['msg']}")


def _real_path(loc: tuple[int | str, ...], data: object) -> list[str]:
    """pydantic puts union tags into error locations; keep only the keys and indexes of the input."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError:
            return [str(p) for p in loc]
    path: list[str] = []
    node, tag_used = data, False
    for i, part in enumerate(loc):
        if i == len(loc) - 1:
            path.append(str(part))
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            path.append(str(part))
            node, tag_used = node[part], False
        elif isinstance(node, dict):
            is_tag = part == "unknown" or part in (node.get("type"), node.get("role"))
            if is_tag and not tag_used:
                tag_used = True
            elif part in node:
                path.append(str(part))
                node, tag_used = node[part], False
    return path


def parse_entry(data: JsonObject | str | bytes) -> Entry:
    """Validate one entry (a dict or a JSON line). Raises InvalidEntryError naming the field."""
    try:
        if isinstance(data, (str, bytes)):
            return _entry_adapter.validate_json(data, context=WIRE)
        return _entry_adapter.validate_python(data, context=WIRE)
    except ValidationError as err:
        raise _explain(err, "entry", data) from None


def parse_entries_json(data: str | bytes, first_index: int = 0) -> list[Entry]:
    """Validate a JSON array of entries in one call (fast path for storage reads); `first_index`:
    where the array starts in a longer one read in parts (errors name the index in the whole)."""
    try:
        return _entries_adapter.validate_json(data, context=WIRE)
    except ValidationError as err:
        raise _explain(err, "entry", data, first_index) from None


def parse_message(data: JsonObject) -> AnyMessage:
    try:
        return _message_adapter.validate_python(data, context=WIRE)
    except ValidationError as err:
        raise _explain(err, "message", data) from None


# ---------------------------------------------------------------- session metadata


class SessionMetadata(Model):
    """What the catalog knows about a session without reading its entries."""

    id: str
    created_at: str
    cwd: str = ""
    name: str | None = None
    path: str | None = None
    parent_session_id: str | None = None
    parent_entry_id: str | None = None
