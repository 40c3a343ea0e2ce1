"""Agent events, named as in Pi. Every listener sees them in this order for a run:

agent_start, turn_start, (message_start, message_update*, message_end)*,
(tool_execution_start, tool_execution_update*, tool_execution_end)*, turn_end, …, agent_end

Two more (ours, not Pi's) announce waits a person should see as a countdown, whenever they start
inside a run: `retry_wait` (the request failed before its first byte and is sent again after
`delay_s`) and `stream_wait` (the provider has been silent for `waited_s`; the request fails when
the silence reaches `limit_s`). The next message_start / message_update / message_end ends the wait.

Each event is a frozen dataclass tagged by `type` (a Literal); `AgentEvent` is their union, so a
listener dispatches with `match` and `typing.assert_never` sees a new event kind left unhandled.
The messages events carry are the agent's own objects: a listener reads them, never changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from treechat.llm.types import StreamEvent
from treechat.storage.model import AssistantMessage, ToolResultMessage

from .types import AgentMessage, JsonObject, ToolResult


@dataclass(frozen=True, kw_only=True)
class AgentStart:
    type: Literal["agent_start"] = "agent_start"


@dataclass(frozen=True, kw_only=True)
class TurnStart:
    type: Literal["turn_start"] = "turn_start"


@dataclass(frozen=True, kw_only=True)
class MessageStart:
    message: AgentMessage
    type: Literal["message_start"] = "message_start"


@dataclass(frozen=True, kw_only=True)
class MessageUpdate:
    message: AssistantMessage  # the reply so far
    assistant_event: StreamEvent | None = None  # the provider's event (delta, content_index)
    type: Literal["message_update"] = "message_update"


@dataclass(frozen=True, kw_only=True)
class MessageEnd:
    message: AgentMessage
    type: Literal["message_end"] = "message_end"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionStart:
    tool_call_id: str
    tool_name: str
    args: JsonObject = field(default_factory=dict)
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionUpdate:
    tool_call_id: str
    tool_name: str
    args: JsonObject = field(default_factory=dict)
    partial_result: ToolResult | None = None
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionEnd:
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool = False
    type: Literal["tool_execution_end"] = "tool_execution_end"


@dataclass(frozen=True, kw_only=True)
class TurnEnd:
    message: AssistantMessage
    tool_results: list[ToolResultMessage] = field(default_factory=list)
    type: Literal["turn_end"] = "turn_end"


@dataclass(frozen=True, kw_only=True)
class AgentEnd:
    messages: list[AgentMessage] = field(default_factory=list)
    type: Literal["agent_end"] = "agent_end"


@dataclass(frozen=True, kw_only=True)
class ImagesReplaced:
    """A request went to a model without image input: its `count` images were replaced by a short
    note (the stored messages keep them). Emitted before the request, once per model per Agent."""

    model: str  # "provider/id"
    count: int
    type: Literal["images_replaced"] = "images_replaced"


@dataclass(frozen=True, kw_only=True)
class RetryWait:
    attempt: int  # 1-based: the first retry is attempt 1
    max_attempts: int  # retries allowed (RetryPolicy.max_retries)
    delay_s: float  # seconds until the request is sent again
    reason: str  # the failure's sentence (secrets redacted; model/server text: sanitise before showing)
    retry_after: bool = False  # the server named the delay (Retry-After)
    provider: str = ""
    started_at: float = 0.0  # time.monotonic() when the wait began: remaining = delay_s - (now - started_at)
    type: Literal["retry_wait"] = "retry_wait"


@dataclass(frozen=True, kw_only=True)
class StreamWait:
    phase: Literal["first_byte", "idle"]  # "first_byte": no token yet; "idle": the reply stopped mid-way
    waited_s: float  # silent for this long when announced
    limit_s: float  # the request fails when the silence reaches this (first_byte_timeout / idle_timeout)
    provider: str = ""
    started_at: float = 0.0  # time.monotonic() when the silence began
    type: Literal["stream_wait"] = "stream_wait"


AgentEvent = (
    AgentStart
    | TurnStart
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | TurnEnd
    | AgentEnd
    | ImagesReplaced
    | RetryWait
    | StreamWait
)
