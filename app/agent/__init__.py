"""Agent core: state, events, the loop, queues, tools (docs/architecture.md, "The agent core").

The names below are loaded on first use: `treechat context` builds a system prompt from the
tools' descriptions (`treechat.agent.tools`) without the loop and its providers (httpx).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agent import BUSY_CONTINUE, BUSY_PROMPT, Agent
    from .convert import convert_to_llm
    from .events import AgentEvent
    from .queues import MessageQueue
    from .state import AgentState
    from .tools.base import AgentTool, FunctionTool, ToolResult, text_result

_WHERE = {"Agent": ".agent", "BUSY_PROMPT": ".agent", "BUSY_CONTINUE": ".agent", "convert_to_llm": ".convert",
          "AgentEvent": ".events", "MessageQueue": ".queues", "AgentState": ".state", "AgentTool": ".tools.base",
          "FunctionTool": ".tools.base", "ToolResult": ".tools.base", "text_result": ".tools.base"}

__all__ = ["Agent", "AgentState", "AgentEvent", "AgentTool", "FunctionTool", "MessageQueue", "ToolResult",
           "convert_to_llm", "text_result", "BUSY_PROMPT", "BUSY_CONTINUE"]


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(where, __name__), name)
