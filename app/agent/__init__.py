"""Agent core: state, events, the loop, queues, tools. See DESIGN §5."""

from .agent import BUSY_CONTINUE, BUSY_PROMPT, Agent
from .convert import convert_to_llm
from .events import AgentEvent
from .queues import MessageQueue
from .state import AgentState
from .tools.base import AgentTool, FunctionTool, ToolResult, text_result

__all__ = ["Agent", "AgentState", "AgentEvent", "AgentTool", "FunctionTool", "MessageQueue", "ToolResult",
           "convert_to_llm", "text_result", "BUSY_PROMPT", "BUSY_CONTINUE"]
