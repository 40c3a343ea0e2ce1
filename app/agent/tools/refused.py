"""A tool offered as it is whose every call is refused with one reason, without asking anyone.

A comparison's runs (one prompt, several models) outside a git repository would change the same
files at once: their edit, write and bash say why they cannot (chat/runs.py). The tool set stays
what it was, so the branch records no narrower set and continuing on it later carries every tool.
"""

from __future__ import annotations

from typing import Any

from treechat.llm.abort import AbortSignal

from ..types import JsonObject, ToolResult
from .base import AgentTool, AnyTool, OnUpdate, text_result


class RefusedTool(AgentTool[Any]):
    def __init__(self, tool: AnyTool, reason: str) -> None:
        self.inner, self.reason = tool, reason
        self.name, self.label, self.description = tool.name, tool.label, tool.description
        self.Args = tool.Args
        self.execution_mode = tool.execution_mode
        self.timeout = tool.timeout

    @property
    def parameters(self) -> JsonObject:
        return self.inner.parameters

    def prepare_arguments(self, args: JsonObject) -> JsonObject:
        return self.inner.prepare_arguments(args)

    async def execute(self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: OnUpdate) -> ToolResult:
        return text_result(self.reason, is_error=True)


__all__ = ["RefusedTool"]
