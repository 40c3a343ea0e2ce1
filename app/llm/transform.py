"""History clean-up before any provider sees it (both adapters use it).

Failed or aborted assistant turns are left out (replaying them confuses providers), and a tool
call that never got a result gets a synthetic error result so the request stays well-formed.
"""

from __future__ import annotations

from treechat.storage.model import AssistantMessage, TextContent, ToolCall, ToolResultMessage

from .types import LlmMessage

NO_RESULT = "No result provided"


def prepare_messages(messages: list[LlmMessage]) -> list[LlmMessage]:
    out: list[LlmMessage] = []
    open_calls: list[ToolCall] = []

    def close_open_calls() -> None:
        for call in open_calls:
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=NO_RESULT)],
                    is_error=True,
                )
            )
        open_calls.clear()

    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            open_calls[:] = [c for c in open_calls if c.id != msg.tool_call_id]
            out.append(msg)
            continue
        close_open_calls()
        if isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue
            open_calls.extend(b for b in msg.content if isinstance(b, ToolCall))
        out.append(msg)
    close_open_calls()
    return out
