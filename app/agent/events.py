"""Agent events, named as in Pi. Every listener sees them in this order for a run:

agent_start, turn_start, (message_start, message_update*, message_end)*,
(tool_execution_start, tool_execution_update*, tool_execution_end)*, turn_end, …, agent_end
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
]
