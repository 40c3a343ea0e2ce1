"""Markdown export of a session's active path (for reading and sharing, not for re-import).

The file is read in a terminal (`cat`, `less -R`, a pager in git) as often as in an editor, so
control characters from the model, tools and files are written as visible placeholders ("␛",
"<U+202E>") unless the caller asks for the raw text."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from treechat.text.sanitize import visible, visible_line

if TYPE_CHECKING:
    from treechat.agent.types import AgentMessage


def render_markdown(title: str, messages: Sequence[AgentMessage], *, raw: bool = False) -> str:
    out = [f"# {title if raw else visible_line(title)}", ""]
    for msg in messages:
        out.extend(_render(msg))
        out.append("")
    text = "\n".join(out).rstrip() + "\n"
    return text if raw else visible(text)


def _diff_of(msg: ToolResultMessage) -> str:
    details = msg.details if isinstance(msg.details, dict) else {}
    diff = details.get("diff")
    return diff if msg.tool_name in ("edit", "write") and not msg.is_error and isinstance(diff, str) else ""


def _render(msg: AgentMessage) -> list[str]:
    if isinstance(msg, UserMessage):
        return ["## User", "", message_text(msg)]
    if isinstance(msg, AssistantMessage):
        lines = [f"## Assistant ({msg.provider}/{msg.model})" if msg.model else "## Assistant", ""]
        for block in msg.content:
            if isinstance(block, TextContent):
                lines.append(block.text)
            elif isinstance(block, ThinkingContent):
                lines.extend(["<details><summary>Thinking</summary>", "", block.thinking, "", "</details>"])
            elif isinstance(block, ToolCall):
                args = json.dumps(block.arguments, ensure_ascii=False, indent=2)
                lines.extend([f"**Tool call** `{block.name}`", "", "```json", args, "```"])
        if msg.stop_reason in ("error", "aborted"):
            lines.extend(["", f"> **{msg.stop_reason}**: {msg.error_message or ''}".rstrip()])
        return lines
    if isinstance(msg, ToolResultMessage):
        status = " (error)" if msg.is_error else ""
        lines = [f"### Tool result `{msg.tool_name}`{status}", "", "```", message_text(msg), "```"]
        diff = _diff_of(msg)
        if diff:  # an edit or write that changed a file: its unified diff, fenced longer than any run inside
            fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", diff)), default=0) + 1)
            lines.extend(["", f"{fence}diff", diff, fence])
        return lines
    if isinstance(msg, BashExecutionMessage):
        return ["### Shell", "", f"`$ {msg.command}`", "", "```", msg.output, "```"]
    if isinstance(msg, CompactionSummaryMessage):
        return ["## Summary of earlier conversation", "", msg.summary]
    if isinstance(msg, BranchSummaryMessage):
        return ["## Summary of an abandoned branch", "", msg.summary]
    if isinstance(msg, CustomMessage):
        return [f"## {msg.custom_type}", "", message_text(msg)]
    return []
