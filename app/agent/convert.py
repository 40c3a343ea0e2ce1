"""`convert_to_llm`: the only exit from agent messages to provider messages. It never raises."""

from __future__ import annotations

import logging

from treechat.llm.types import ModelInfo
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

from .types import AgentMessage, LlmMessage

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


def _convert_one(msg: AgentMessage) -> LlmMessage | None:
    if isinstance(msg, (UserMessage, AssistantMessage, ToolResultMessage)):
        return msg
    if isinstance(msg, BashExecutionMessage):
        if msg.exclude_from_context:
            return None
        return UserMessage(content=[TextContent(text=bash_execution_text(msg))], timestamp=msg.timestamp)
    if isinstance(msg, CustomMessage):
        content: list[ContentBlock] = [TextContent(text=msg.content)] if isinstance(msg.content, str) else list(msg.content)
        return UserMessage(content=content, timestamp=msg.timestamp)
    if isinstance(msg, BranchSummaryMessage):
        text = BRANCH_SUMMARY_PREFIX + msg.summary + BRANCH_SUMMARY_SUFFIX
        return UserMessage(content=[TextContent(text=text)], timestamp=msg.timestamp)
    if isinstance(msg, CompactionSummaryMessage):
        text = COMPACTION_SUMMARY_PREFIX + msg.summary + COMPACTION_SUMMARY_SUFFIX
        return UserMessage(content=[TextContent(text=text)], timestamp=msg.timestamp)
    return None  # unknown roles are never sent


def convert_to_llm(messages: list[AgentMessage]) -> list[LlmMessage]:
    out: list[LlmMessage] = []
    for msg in messages:
        try:
            converted = _convert_one(msg)
        except Exception:  # a malformed message must not break the whole request
            log.warning("dropping a message that could not be converted", exc_info=True)
            continue
        if converted is not None:
            out.append(converted)
    return out


# ---------------------------------------------------------------- models without image input
# Pi's convertToLlmWithBlockImages: the stored entry keeps the image; only the request to a
# model that cannot see images carries a short note in its place.

IMAGE_PLACEHOLDER = "[An image was attached here, but this model cannot see images.]"


def accepts_images(model: ModelInfo) -> bool:
    return "image" in (model.input or ("text",))


def replace_images(messages: list[LlmMessage], placeholder: str = IMAGE_PLACEHOLDER) -> tuple[list[LlmMessage], int]:
    """(messages with every image block of user and tool-result messages replaced by
    `placeholder`, how many were replaced). Consecutive placeholders collapse into one; the
    messages given are not modified."""
    out: list[LlmMessage] = []
    replaced = 0
    for msg in messages:
        content = msg.content
        if not isinstance(msg, (UserMessage, ToolResultMessage)) or not isinstance(content, list) or not any(
            isinstance(b, ImageContent) for b in content
        ):
            out.append(msg)
            continue
        blocks: list[ContentBlock] = []
        for block in content:
            if isinstance(block, ImageContent):
                replaced += 1
                block = TextContent(text=placeholder)
            if isinstance(block, TextContent) and block.text == placeholder and blocks and \
                    isinstance(blocks[-1], TextContent) and blocks[-1].text == placeholder:
                continue
            blocks.append(block)
        out.append(msg.model_copy(update={"content": blocks}))
    return out, replaced
