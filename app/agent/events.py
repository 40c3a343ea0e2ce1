"""Agent events, named as in Pi. Every listener sees them in this order for a run:

agent_start, turn_start, (message_start, message_update*, message_end)*,
(tool_execution_start, tool_execution_update*, tool_execution_end)*, turn_end, …, agent_end

Two more (ours, not Pi's) announce waits a person should see as a countdown, whenever they start
inside a run: `retry_wait` (the request failed before its first byte and is sent again after
`delay_s`) and `stream_wait` (the provider has been silent for `waited_s`; the request fails when
the silence reaches `limit_s`). The next message_start / message_update / message_end ends the wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True, kw_only=True)
class AgentStart:
    type: str = "agent_start"


@dataclass(frozen=True, kw_only=True)
class TurnStart:
    type: str = "turn_start"


@dataclass(frozen=True, kw_only=True)
class MessageStart:
    message: Any
    type: str = "message_start"


@dataclass(frozen=True, kw_only=True)
class MessageUpdate:
    message: Any
    assistant_event: Any = None  # the provider StreamEvent (delta, content_index)
    type: str = "message_update"


@dataclass(frozen=True, kw_only=True)
class MessageEnd:
    message: Any
    type: str = "message_end"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionStart:
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)
    type: str = "tool_execution_start"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionUpdate:
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)
    partial_result: Any = None
    type: str = "tool_execution_update"


@dataclass(frozen=True, kw_only=True)
class ToolExecutionEnd:
    tool_call_id: str
    tool_name: str
    result: Any  # a ToolResult
    is_error: bool = False
    type: str = "tool_execution_end"


@dataclass(frozen=True, kw_only=True)
class TurnEnd:
    message: Any
    tool_results: list[Any] = field(default_factory=list)
    type: str = "turn_end"


@dataclass(frozen=True, kw_only=True)
class AgentEnd:
    messages: list[Any] = field(default_factory=list)
    type: str = "agent_end"


@dataclass(frozen=True, kw_only=True)
class ImagesReplaced:
    """A request went to a model without image input: its `count` images were replaced by a short
    note (the stored messages keep them). Emitted before the request, once per model per Agent."""

    model: str  # "provider/id"
    count: int
    type: str = "images_replaced"


@dataclass(frozen=True, kw_only=True)
class RetryWait:
    attempt: int  # 1-based: the first retry is attempt 1
    max_attempts: int  # retries allowed (RetryPolicy.max_retries)
    delay_s: float  # seconds until the request is sent again
    reason: str  # the failure's sentence (secrets redacted; model/server text: sanitise before showing)
    retry_after: bool = False  # the server named the delay (Retry-After)
    provider: str = ""
    started_at: float = 0.0  # time.monotonic() when the wait began: remaining = delay_s - (now - started_at)
    type: str = "retry_wait"


@dataclass(frozen=True, kw_only=True)
class StreamWait:
    phase: str  # "first_byte": no token yet; "idle": the reply stopped mid-way
    waited_s: float  # silent for this long when announced
    limit_s: float  # the request fails when the silence reaches this (first_byte_timeout / idle_timeout)
    provider: str = ""
    started_at: float = 0.0  # time.monotonic() when the silence began
    type: str = "stream_wait"


AgentEvent = Union[
    AgentStart,
    TurnStart,
    MessageStart,
    MessageUpdate,
    MessageEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolExecutionEnd,
    TurnEnd,
    AgentEnd,
    ImagesReplaced,
    RetryWait,
    StreamWait,
]
