"""The agent core's contracts: the messages it holds, JSON payloads, and what it is given.

An agent holds `AgentMessage`s (every role a session path can contribute, tagged by `role`);
only `LlmMessage`s (user, assistant, tool result) reach a provider, through `convert_to_llm`.
The hooks are what a caller may plug into a run (the tool-call hooks are in loop.py, with what
they are handed); a hook may return its value or an awaitable of it, the loop awaits either.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias, TypedDict, TypeVar

from treechat.llm.abort import AbortSignal
from treechat.llm.types import LlmMessage, ModelInfo
from treechat.storage.json_types import Json, JsonObject
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UnknownMessage,
    Usage,
    UserMessage,
)

T = TypeVar("T")

# A JSON value (what a tool's arguments, details and schemas are made of): storage's, the layer
# below, so an entry's payload and a tool's arguments are one type.

# Every message a session path contributes; `UnknownMessage` is a role this version does not
# know (kept, never sent).
AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | BashExecutionMessage | CustomMessage | BranchSummaryMessage | CompactionSummaryMessage | UnknownMessage
Content: TypeAlias = TextContent | ImageContent  # what a tool result carries

MaybeAwaitable: TypeAlias = T | Awaitable[T]


@dataclass
class ToolResult:
    """What a tool returns: the content the model sees, details for front ends (the diff of
    an edit), and whether it failed."""

    content: list[Content] = field(default_factory=list)
    details: Json = None
    is_error: bool = False
    terminate: bool = False  # ask the loop to stop after this batch (only if every result agrees)
    usage: Usage | None = None  # what the tool spent on a model's requests (a sub-agent's), stored with the result


class ToolCallBlock(TypedDict, total=False):
    """`before_tool_call`'s answer: block the call (the model sees `reason` as an error result)."""

    block: bool
    reason: str


class ToolResultOverride(TypedDict, total=False):
    """`after_tool_call`'s answer: the fields given replace the tool's own."""

    content: list[Content]
    details: Json
    is_error: bool
    terminate: bool


# Hooks given to an Agent (the tool-call hooks are in loop.py, with what they are handed). An
# exception from one ends the run as an error reply, persisted like any other.
ConvertToLlm = Callable[[list[AgentMessage]], MaybeAwaitable[list[LlmMessage]]]
TransformContext = Callable[[list[AgentMessage], AbortSignal], MaybeAwaitable[list[AgentMessage]]]
GetApiKey = Callable[[str], MaybeAwaitable[str | None]]  # provider name -> key (None: none)


class ModelRegistry(Protocol):
    """What an agent session needs of the model registry (`treechat.llm.registry.ModelRegistry`)."""

    def resolve(self, ref: str) -> ModelInfo:
        """"provider/id" -> the model; raises ValueError (one sentence) for an unknown ref."""
        ...

    def api_key(self, provider: str) -> str | None:
        """The provider's key, or None (a local server needs none). Must not raise."""
        ...


__all__ = ["AgentMessage", "LlmMessage", "Json", "JsonObject", "Content", "MaybeAwaitable", "ToolResult",
           "ToolCallBlock", "ToolResultOverride", "ConvertToLlm", "TransformContext", "GetApiKey", "ModelRegistry"]
