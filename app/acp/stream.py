"""A run as ACP session updates: what the agent says and thinks, and its tool calls.

- text deltas are `agent_message_chunk`s, thinking deltas `agent_thought_chunk`s (each message's
  chunks share a `messageId`);
- a tool call is announced (`tool_call`, pending) as soon as the model has written it, goes
  `in_progress` when it starts, and ends `completed` or `failed` with what it produced: its text
  and images; the file before and after for an edit or write that was made; the terminal for a
  command the editor ran;
- no `plan` updates: treechat's agent keeps no plan (it has no todo tool), so there is none to show.

`ToolCalls` is the run's memory of its calls: the permission questions (permissions.py) find
the call they are about in it, and leave the change they showed for the call's last update.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from treechat.agent.events import MessageEnd, MessageStart, MessageUpdate, ToolExecutionEnd, ToolExecutionStart
from treechat.agent.types import JsonObject
from treechat.session.events import SessionEvent
from treechat.storage.model import AssistantMessage, ToolCall

from .calls import Content, describe, result_content, terminal_content

Update = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress


class ToolCalls:
    """The calls of the session's runs: announced, running (with their arguments), the change
    each edit or write showed, the terminal each command ran in."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.announced: set[str] = set()
        self.running: dict[str, tuple[str, JsonObject]] = {}
        self.changes: dict[str, list[Content]] = {}
        self.terminals: dict[str, str] = {}

    def find(self, name: str, test: Callable[[JsonObject], bool] = lambda args: True) -> tuple[str, JsonObject] | None:
        """The running call of `name` a question is about: the one whose arguments pass `test`,
        else any of that name (None: none runs, e.g. the call came from elsewhere)."""
        named = [(call_id, args) for call_id, (tool, args) in self.running.items() if tool == name]
        return next((c for c in named if test(c[1])), named[0] if named else None)

    def terminal(self, call_id: str, terminal_id: str) -> None:
        self.terminals[call_id] = terminal_id

    def announce(self, call_id: str, name: str, args: Mapping[str, object], status: str = "pending") -> ToolCallStart:
        self.announced.add(call_id)
        about = describe(name, args, self.cwd)
        return ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=about.title, kind=about.kind,
                             status="in_progress" if status == "in_progress" else "pending",
                             locations=about.locations or None, raw_input=dict(args))


class Stream:
    """Session events to updates, for one session (`updates(event)`; never raises)."""

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self.message_id: str | None = None  # the assistant message streaming now

    def updates(self, event: SessionEvent) -> list[Update]:
        match event:
            case MessageStart(message=AssistantMessage()):
                self.message_id = uuid.uuid4().hex
                return []
            case MessageUpdate():
                return self._delta(event)
            case MessageEnd(message=AssistantMessage() as reply):
                return [self.calls.announce(b.id, b.name, b.arguments) for b in reply.content
                        if isinstance(b, ToolCall) and b.id not in self.calls.announced]
            case ToolExecutionStart():
                self.calls.running[event.tool_call_id] = (event.tool_name, dict(event.args))
                if event.tool_call_id not in self.calls.announced:
                    return [self.calls.announce(event.tool_call_id, event.tool_name, event.args, "in_progress")]
                return [ToolCallProgress(session_update="tool_call_update", tool_call_id=event.tool_call_id,
                                         status="in_progress")]
            case ToolExecutionEnd():
                return [self._ended(event)]
            case _:
                return []

    def _delta(self, event: MessageUpdate) -> list[Update]:
        ev = event.assistant_event
        if ev is None:
            return []
        if ev.type == "text_delta" and ev.delta:
            return [AgentMessageChunk(session_update="agent_message_chunk", message_id=self.message_id,
                                      content=TextContentBlock(type="text", text=ev.delta))]
        if ev.type == "thinking_delta" and ev.delta:
            return [AgentThoughtChunk(session_update="agent_thought_chunk", message_id=self.message_id,
                                      content=TextContentBlock(type="text", text=ev.delta))]
        if ev.type == "toolcall_end" and ev.content_index is not None and ev.content_index < len(ev.partial.content):
            block = ev.partial.content[ev.content_index]
            if isinstance(block, ToolCall) and block.id not in self.calls.announced:
                return [self.calls.announce(block.id, block.name, block.arguments)]
        return []

    def _ended(self, event: ToolExecutionEnd) -> ToolCallProgress:
        call_id = event.tool_call_id
        self.calls.running.pop(call_id, None)
        change = self.calls.changes.pop(call_id, None)
        terminal = self.calls.terminals.pop(call_id, None)
        content: list[Content]
        if terminal is not None:
            content = [terminal_content(terminal)]  # the editor keeps showing its output
        elif change is not None and not event.is_error:
            content = change
        else:
            content = result_content(event.result.content)
        return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                status="failed" if event.is_error else "completed", content=content)


__all__ = ["ToolCalls", "Stream", "Update"]
