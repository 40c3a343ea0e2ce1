"""What a copy puts on the clipboard: a message as a person would paste it, or one code block.

``copy_text(message)``: a user message's text; a reply's text without its thinking (code fences
kept); a tool's or a command's output; a summary's text. ``code_blocks(markdown)``: the exact
contents of the fenced and indented code blocks of a Markdown text, found with markdown-it-py (the
parser Rich renders with), so a copy is the block and nothing around it. ``markdown_parts`` splits a
reply at its top-level code blocks, so each can be drawn with its own "copy" affordance.

Everything is sanitized first: a paste into a terminal must not carry escape sequences either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    CompactionEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from treechat.text.sanitize import sanitize

from .items import ItemMessage

_CODE_TOKENS = ("fence", "code_block")


@dataclass(frozen=True)
class CodeBlock:
    code: str  # exactly the block's content (no fence lines, indentation of indented blocks removed)
    language: str  # the fence's info word ("" when none)
    top_level: bool  # not inside a list or a quote: drawn on its own, with its own "copy"
    lines: tuple[int, int]  # source lines [start, end) of the whole block, fences included


def reply_markdown(message: ItemMessage) -> str:
    """The Markdown a reply shows: its text blocks, joined as the transcript draws them."""
    if isinstance(message, AssistantMessage):
        return "\n\n".join(b.text for b in message.content if isinstance(b, TextContent))
    return ""


def copy_text(message: ItemMessage) -> str:
    """The text of a transcript item as a person would paste it (sanitized)."""
    if isinstance(message, AssistantMessage):
        text = reply_markdown(message)
        if not text.strip():  # a reply that only called tools: the calls are what it said
            calls = [b for b in message.content if isinstance(b, ToolCall)]
            text = "\n".join(f"{c.name} {json.dumps(c.arguments, default=str)}" for c in calls)
        return sanitize(text)
    if isinstance(message, BashExecutionMessage):
        return sanitize(message.output)
    if isinstance(message, (CompactionEntry, BranchSummaryEntry)):
        return sanitize(message.summary)
    return sanitize(message_text(message))


def what_is(message: ItemMessage) -> str:
    """How a copy of this item is named in a notice ("Copied the reply")."""
    if isinstance(message, UserMessage):
        return "your message"
    if isinstance(message, AssistantMessage):
        return "the reply"
    if isinstance(message, (ToolResultMessage, BashExecutionMessage)):
        return "the output"
    return "the summary" if isinstance(message, (CompactionEntry, BranchSummaryEntry)) else "the message"


def _may_have_code(text: str) -> bool:
    """Cheap test before parsing: fences, or a line indented by four spaces or a tab."""
    return "```" in text or "~~~" in text or "\n    " in text or "\n\t" in text or text.startswith(("    ", "\t"))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt().enable("strikethrough").enable("table")  # as rich.markdown.Markdown parses


@lru_cache(maxsize=256)
def _blocks(text: str) -> tuple[CodeBlock, ...]:
    tokens: list[Token] = _parser().parse(text)
    out = []
    for token in tokens:
        if token.type in _CODE_TOKENS and token.map is not None:
            language = token.info.split()[0] if token.info.strip() else ""
            # without the last newline: a pasted shell command should wait for its Enter
            out.append(CodeBlock(token.content.rstrip("\n"), language, token.level == 0, (token.map[0], token.map[1])))
    return tuple(out)


def code_blocks(markdown: str) -> tuple[CodeBlock, ...]:
    """The code blocks of a Markdown text (sanitized), in order."""
    text = sanitize(markdown)
    return _blocks(text) if _may_have_code(text) else ()


@dataclass(frozen=True)
class Part:
    """A piece of a reply's Markdown: a top-level code block (``code`` is its index in
    ``code_blocks``) or the Markdown between them (``nested``: the blocks inside its lists/quotes)."""

    source: str
    code: int | None = None
    nested: tuple[int, ...] = ()


def markdown_parts(markdown: str) -> list[Part]:
    """The sanitized text cut at its top-level code blocks. Blank pieces are left out."""
    text = sanitize(markdown)
    blocks = _blocks(text) if _may_have_code(text) else ()
    if not blocks:
        return [Part(text)] if text.strip() else []
    lines = text.split("\n")
    parts: list[Part] = []

    def between(start: int, end: int) -> None:
        source = "\n".join(lines[start:end])
        if source.strip():
            nested = tuple(i for i, b in enumerate(blocks) if not b.top_level and start <= b.lines[0] < end)
            parts.append(Part(source, None, nested))

    at = 0
    for index, block in enumerate(blocks):
        if block.top_level:
            between(at, block.lines[0])
            parts.append(Part("\n".join(lines[block.lines[0] : block.lines[1]]), index))
            at = block.lines[1]
    between(at, len(lines))
    return parts
