"""A session's path (root to leaf) replayed to the editor as it was said (`session/load`).

Each message becomes the updates it would have streamed: the person's words and images
(`user_message_chunk`), the model's thinking and text (`agent_thought_chunk`,
`agent_message_chunk`), each tool call (`tool_call`) and its result (`tool_call_update`,
completed or failed, with its content); a command typed in the app (`!cmd`) is a finished
`execute` call; a compaction's or a branch's summary is a thought headed as such. Settings
entries, labels and checkpoints are not conversation and are not replayed. A call left without
a result (a run that was stopped) ends failed. A long path replays its newest `MAX_MESSAGES`
messages, after one line saying how many came before.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ImageContentBlock,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessage,
    CustomMessageEntry,
    Entry,
    ImageContent,
    MessageEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from .calls import Content, describe, replayed_change, result_content, text_content

MAX_MESSAGES = 2000

Replayed = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _user(content: str | Sequence[object], message_id: str) -> list[Replayed]:
    blocks = [TextContent(text=content)] if isinstance(content, str) else content
    out: list[Replayed] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            out.append(UserMessageChunk(session_update="user_message_chunk", message_id=message_id,
                                        content=_text(block.text)))
        elif isinstance(block, ImageContent):
            out.append(UserMessageChunk(session_update="user_message_chunk", message_id=message_id,
                                        content=ImageContentBlock(type="image", data=block.data,
                                                                  mime_type=block.mime_type)))
    return out


class Replay:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.open: dict[str, tuple[str, dict[str, object]]] = {}  # calls without a result yet

    def updates(self, entries: Sequence[Entry]) -> list[Replayed]:
        talk = [e for e in entries if _said(e)]
        out: list[Replayed] = []
        if len(talk) > MAX_MESSAGES:
            left = len(talk) - MAX_MESSAGES
            out.append(AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(
                f"({left:,} earlier message{'s' if left != 1 else ''} of this session are not shown here.)")))
            talk = talk[-MAX_MESSAGES:]
        for entry in talk:
            out += self._entry(entry)
        for call_id in list(self.open):
            out.append(ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="failed"))
        self.open.clear()
        return out

    def _entry(self, entry: Entry) -> list[Replayed]:
        if isinstance(entry, CompactionEntry):
            return [_summary("Summary of the conversation before this point", entry.summary, entry.id)]
        if isinstance(entry, BranchSummaryEntry):
            return [_summary("Summary of the branch left before this point", entry.summary, entry.id)]
        if isinstance(entry, CustomMessageEntry):
            return _user(entry.content, entry.id) if entry.display else []
        assert isinstance(entry, MessageEntry)
        message = entry.message
        if isinstance(message, UserMessage):
            return _user(message.content, entry.id)
        if isinstance(message, CustomMessage):
            return _user(message.content, entry.id) if message.display else []
        if isinstance(message, AssistantMessage):
            return self._assistant(message, entry.id)
        if isinstance(message, ToolResultMessage):
            return self._result(message)
        if isinstance(message, BashExecutionMessage):
            about = describe("bash", {"command": message.command}, self.cwd)
            failed = message.cancelled or bool(message.exit_code)
            return [ToolCallStart(session_update="tool_call", tool_call_id=entry.id, title=about.title,
                                  kind=about.kind, status="failed" if failed else "completed",
                                  raw_input={"command": message.command},
                                  content=[text_content(message.output)] if message.output else None)]
        return []

    def _assistant(self, message: AssistantMessage, message_id: str) -> list[Replayed]:
        out: list[Replayed] = []
        for block in message.content:
            if isinstance(block, ThinkingContent) and block.thinking:
                out.append(AgentThoughtChunk(session_update="agent_thought_chunk", message_id=message_id,
                                             content=_text(block.thinking)))
            elif isinstance(block, TextContent) and block.text:
                out.append(AgentMessageChunk(session_update="agent_message_chunk", message_id=message_id,
                                             content=_text(block.text)))
            elif isinstance(block, ToolCall):
                about = describe(block.name, block.arguments, self.cwd)
                self.open[block.id] = (block.name, dict(block.arguments))
                out.append(ToolCallStart(session_update="tool_call", tool_call_id=block.id, title=about.title,
                                         kind=about.kind, status="pending", locations=about.locations or None,
                                         raw_input=dict(block.arguments)))
        if message.stop_reason == "error" and message.error_message:
            out.append(AgentMessageChunk(session_update="agent_message_chunk", message_id=message_id,
                                         content=_text(f"\n\n(The reply failed: {message.error_message})")))
        return out

    def _result(self, message: ToolResultMessage) -> list[Replayed]:
        name, args = self.open.pop(message.tool_call_id, (message.tool_name, {}))
        content: list[Content] = []
        if name in ("edit", "write") and not message.is_error:
            content = replayed_change(name, args, message.details, self.cwd)
        content = content or result_content(message.content)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=message.tool_call_id,
                                 status="failed" if message.is_error else "completed", content=content)]


def _said(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry | CompactionEntry | BranchSummaryEntry | CustomMessageEntry)


def _summary(head: str, summary: str, message_id: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(session_update="agent_thought_chunk", message_id=message_id,
                             content=_text(f"{head}:\n\n{summary}"))


__all__ = ["Replay", "MAX_MESSAGES"]
