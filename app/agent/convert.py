"""`convert_to_llm`: the only exit from agent messages to provider messages. It never raises."""

from __future__ import annotations

import logging
from typing import Any

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

log = logging.getLogger(__name__)


def bash_execution_text(msg: BashExecutionMessage) -> str:
    text = f"Ran `{msg.command}`\n"
    text += f"```\n{msg.output}\n```" if msg.output else "(no output)"
    if msg.cancelled:
        text += "\n\n(command cancelled)"
    elif msg.exit_code:
        text += f"\n\nCommand exited with code {msg.exit_code}"
    if msg.truncated and msg.full_output_path:
        text += f"\n\n[Output truncated. Full output: {msg.full_output_path}]"
    return text


def _convert_one(msg: Any) -> Any:
    if isinstance(msg, (UserMessage, AssistantMessage, ToolResultMessage)):
        return msg
    if isinstance(msg, BashExecutionMessage):
        if msg.exclude_from_context:
            return None
        return UserMessage(content=[TextContent(text=bash_execution_text(msg))], timestamp=msg.timestamp)
    if isinstance(msg, CustomMessage):
        content = [TextContent(text=msg.content)] if isinstance(msg.content, str) else list(msg.content)
        return UserMessage(content=content, timestamp=msg.timestamp)
    if isinstance(msg, BranchSummaryMessage):
        text = BRANCH_SUMMARY_PREFIX + msg.summary + BRANCH_SUMMARY_SUFFIX
        return UserMessage(content=[TextContent(text=text)], timestamp=msg.timestamp)
    if isinstance(msg, CompactionSummaryMessage):
        text = COMPACTION_SUMMARY_PREFIX + msg.summary + COMPACTION_SUMMARY_SUFFIX
        return UserMessage(content=[TextContent(text=text)], timestamp=msg.timestamp)
    return None  # unknown roles are never sent


def convert_to_llm(messages: list[Any]) -> list[Any]:
    out = []
    for msg in messages:
        try:
            converted = _convert_one(msg)
        except Exception:  # a malformed message must not break the whole request
            log.warning("dropping a message that could not be converted", exc_info=True)
            continue
        if converted is not None:
            out.append(converted)
    return out
