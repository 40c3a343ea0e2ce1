"""The reduced in-memory agent state. Only the Agent's event reducer writes the runtime fields."""

from __future__ import annotations

from collections.abc import Iterable

from treechat.llm.types import UNKNOWN_MODEL, ModelInfo

from .tools.base import AnyTool
from .types import AgentMessage


class AgentState:
    def __init__(
        self,
        *,
        system_prompt: str = "",
        model: ModelInfo = UNKNOWN_MODEL,
        thinking_level: str = "off",
        tools: Iterable[AnyTool] = (),
        messages: Iterable[AgentMessage] = (),
    ) -> None:
        self.system_prompt = system_prompt
        self.model = model
        self.thinking_level = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        self._is_streaming = False
        self._streaming_message: AgentMessage | None = None
        self._pending_tool_calls: frozenset[str] = frozenset()
        self._error_message: str | None = None

    # Assigning stores a copy (a caller's list never aliases ours); reading returns the live list.
    @property
    def tools(self) -> list[AnyTool]:
        return self._tools

    @tools.setter
    def tools(self, value: Iterable[AnyTool]) -> None:
        self._tools = list(value)

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        self._messages = list(value)

    @property
    def is_streaming(self) -> bool:
        return self._is_streaming

    @property
    def streaming_message(self) -> AgentMessage | None:
        return self._streaming_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return self._pending_tool_calls

    @property
    def error_message(self) -> str | None:
        return self._error_message
