"""task: hand a piece of work to a sub-agent (Claude Code's Task tool, in its shape: a few words
for the person, the whole task for the child).

The child is another agent with a context of its own: a fresh system prompt and the task, never
the caller's conversation, and the caller's tools less this one (a child starts no children).
Its final answer is this tool's result. Who runs it is the controller's business
(`treechat.chat.subagents`): it hands a `SpawnChild` in; without one (a tool list made only to be
described, `treechat context`) the tool says it cannot run here. Several calls in one reply run at
once (the loop's parallel mode); stopping the run stops them (their `signal`).
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from treechat.llm.abort import AbortSignal

from .base import AgentTool, OnUpdate, ToolResult, text_result

NO_SUBAGENTS = "Sub-agents cannot be started here; do the task yourself with the other tools."


class TaskArgs(BaseModel):
    description: str = Field(min_length=1, max_length=200,
                             description="A short description of the task (3-5 words), shown to the person")
    prompt: str = Field(min_length=1, description=(
        "The whole task for the sub-agent. It sees nothing of this conversation: say everything it needs "
        "(the goal, the files and facts you know, what to leave alone) and what its answer should contain."))


class SpawnChild(Protocol):
    """Runs the child agent for one call and returns its answer (or why it has none) as the result."""

    async def __call__(self, call_id: str, args: TaskArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult: ...


class TaskTool(AgentTool[TaskArgs]):
    name, label = "task", "Sub-agent"
    description = (
        "Start a sub-agent on a self-contained task: it works with its own fresh context and the same tools "
        "(except task), and its final answer comes back as this tool's result. Use it for work that would fill "
        "your context (searching a large codebase, reading many files) or for independent parts of a job; "
        "several task calls in one reply run at the same time. It sees nothing of this conversation, so the "
        "prompt must say everything.")
    Args = TaskArgs
    execution_mode = "parallel"
    timeout = None  # the child's own requests and tools are bounded; stopping the run stops it

    def __init__(self, spawn: SpawnChild | None = None) -> None:
        self.spawn = spawn

    async def execute(self, tool_call_id: str, args: TaskArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        if self.spawn is None:
            return text_result(NO_SUBAGENTS, is_error=True)
        return await self.spawn(tool_call_id, args, signal, on_update)


__all__ = ["NO_SUBAGENTS", "SpawnChild", "TaskArgs", "TaskTool"]
