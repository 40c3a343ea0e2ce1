"""Summaries for compaction and branch changes: conversation serialisation and prompts (Pi 0.73.1's compaction and branch-summarization).

The model call is injected (`Complete`): AgentSession passes one bound to the current model, tests
pass a scripted one. A failed call raises SummaryError; nothing is written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence

from treechat.agent.types import AgentMessage
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContentBlock,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from .compaction import CompactionPlan, FileOps

# (system prompt, user prompt, max output tokens) -> the model's text
Complete = Callable[[str, str, int], Awaitable[str]]

TOOL_RESULT_CHARS = 2000

SYSTEM_PROMPT = (
    "You are a context summarization assistant. Read the conversation between a user and an AI "
    "coding assistant and write a structured summary that another assistant will use to continue "
    "the work. Do NOT continue the conversation and do NOT answer questions in it. ONLY output the "
    "structured summary."
)

_SECTIONS = """## Goal
What the user is trying to accomplish (one or more goals).

## Constraints & Preferences
- Requirements, preferences and rules the user stated

## Progress
### Done
- [x] Completed work, with exact file paths and names
### In Progress
- [ ] Work under way
### Blocked
- Issues preventing progress, if any

## Key Decisions
- **Decision**: short rationale

## Next Steps
1. What should happen next, in order

## Critical Context
- Data, error messages, paths, identifiers needed to continue (or "(none)")

Keep exact file paths, function names and error messages."""

INITIAL_INSTRUCTIONS = "Summarize the conversation above in exactly this format:\n\n" + _SECTIONS

UPDATE_INSTRUCTIONS = (
    "The <previous-summary> summarizes the conversation before the messages above. Update it with "
    "the new messages: PRESERVE everything still relevant from it, ADD new progress, decisions and "
    "context, and MOVE items from In Progress to Done when they were completed. Use exactly this "
    "format:\n\n" + _SECTIONS
)

TURN_PREFIX_INSTRUCTIONS = """This is the beginning of a turn that is too long to keep whole; the rest of the turn is kept verbatim. Summarize this prefix so the kept part makes sense:

## Original Request
What the user asked for in this turn

## Early Progress
- What was done so far in this turn

## Context for Suffix
- What is needed to understand the rest of the turn"""

BRANCH_INSTRUCTIONS = (
    "Summarize this conversation branch, which the user is leaving, so its findings are not lost. "
    "Use exactly this format:\n\n## Goal\n\n## Constraints & Preferences\n\n## Progress\n\n"
    "## Key Decisions\n\n## Next Steps\n\nKeep exact file paths, function names and error messages."
)

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n"
)


class SummaryError(Exception):
    """The summary could not be produced; the message says why (for a person)."""


def _text(content: str | Sequence[ContentBlock]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content or [] if isinstance(b, TextContent))


def serialize_conversation(messages: Sequence[AgentMessage]) -> str:
    """Plain text with a labelled block per part, as the summariser reads it."""
    return "\n\n".join(_parts(messages))


def _parts(messages: Sequence[AgentMessage]) -> list[str]:
    parts: list[str] = []
    for msg in messages:
        if isinstance(msg, UserMessage):
            parts.append(f"[User]: {_text(msg.content)}")
        elif isinstance(msg, (CustomMessage,)):
            parts.append(f"[User]: {_text(msg.content)}")
        elif isinstance(msg, BashExecutionMessage):
            if not msg.exclude_from_context:
                parts.append(f"[User]: Ran `{msg.command}`\n{msg.output or '(no output)'}")
        elif isinstance(msg, (BranchSummaryMessage, CompactionSummaryMessage)):
            parts.append(f"[User]: {msg.summary}")
        elif isinstance(msg, AssistantMessage):
            thinking = "\n".join(b.thinking for b in msg.content if isinstance(b, ThinkingContent))
            text = _text(msg.content)
            calls = [
                f"{b.name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in b.arguments.items())})"
                for b in msg.content
                if isinstance(b, ToolCall)
            ]
            if thinking:
                parts.append(f"[Assistant thinking]: {thinking}")
            if text:
                parts.append(f"[Assistant]: {text}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif isinstance(msg, ToolResultMessage):
            out = _text(msg.content)
            if len(out) > TOOL_RESULT_CHARS:
                more = len(out) - TOOL_RESULT_CHARS
                out = out[:TOOL_RESULT_CHARS] + f"\n\n[... {more} more characters truncated]"
            parts.append(f"[Tool result]: {out}")
    return parts


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters left out]"


def serialize_within(messages: Sequence[AgentMessage], max_chars: int | None) -> str:
    """The conversation as `serialize_conversation` writes it, in at most about `max_chars`
    characters: each part is capped, the first request is kept (it usually states the goal), and
    then the newest parts, with a note where older ones were left out. A summary request must fit
    the model's window too, and a small local model cannot read a whole long session at once."""
    parts = _parts(messages)
    full = "\n\n".join(parts)
    if max_chars is None or len(full) <= max_chars:
        return full
    capped = [_cap(p, max(300, max_chars // 8)) for p in parts]
    first = next((i for i, p in enumerate(capped) if p.startswith("[User]:")), None)
    room = max_chars - 200  # the note about what was left out
    head: list[str] = []
    if first is not None:
        head = [_cap(capped[first], max(200, max_chars // 5))]
        room -= len(head[0]) + 2
    tail: list[str] = []
    stop = first if first is not None else -1
    i = len(capped) - 1
    while i > stop and len(capped[i]) + 2 <= room:
        tail.append(capped[i])
        room -= len(capped[i]) + 2
        i -= 1
    tail.reverse()
    left_out = i - stop
    if left_out > 0:
        note = (f"[... {left_out} part(s) of the conversation left out here: they do not fit in the model's "
                "context window; say in the summary that earlier details may be missing ...]")
        head = [*head, note]
    return "\n\n".join([*head, *tail])


def _file_blocks(ops: dict[str, list[str]]) -> str:
    out = ""
    if ops.get("readFiles"):
        out += "\n\n<read-files>\n" + "\n".join(ops["readFiles"]) + "\n</read-files>"
    if ops.get("modifiedFiles"):
        out += "\n\n<modified-files>\n" + "\n".join(ops["modifiedFiles"]) + "\n</modified-files>"
    return out


def _with_focus(instructions: str, custom: str | None) -> str:
    return f"{instructions}\n\nAdditional focus: {custom}" if custom and custom.strip() else instructions


async def summarize_for_compaction(
    plan: CompactionPlan, complete: Complete, reserve_tokens: int, custom_instructions: str | None = None, *,
    max_tokens: int | None = None, input_tokens: int | None = None,
) -> tuple[str, dict[str, list[str]]]:
    """(summary text, details {readFiles, modifiedFiles}). An earlier summary is updated, not redone.
    `max_tokens` caps the summary (default 0.8 × reserve); `input_tokens` caps the estimated size
    of the conversation (and earlier summary) in one request, so it fits a small window."""
    prefix_tokens = int(0.5 * reserve_tokens) if max_tokens is None else max(128, max_tokens // 2)
    max_tokens = int(0.8 * reserve_tokens) if max_tokens is None else max_tokens
    chars = None if input_tokens is None else max(2000, input_tokens * 4)
    previous = plan.previous_summary
    if previous and chars is not None:
        previous = _cap(previous, chars // 3)
        chars -= len(previous)

    async def history() -> str:
        if not plan.messages_to_summarize:
            return "No prior history."
        prompt = f"<conversation>\n{serialize_within(plan.messages_to_summarize, chars)}\n</conversation>\n\n"
        if previous:
            prompt += f"<previous-summary>\n{previous}\n</previous-summary>\n\n"
            prompt += _with_focus(UPDATE_INSTRUCTIONS, custom_instructions)
        else:
            prompt += _with_focus(INITIAL_INSTRUCTIONS, custom_instructions)
        return await _call(complete, SYSTEM_PROMPT, prompt, max_tokens, "Summarization failed")

    async def prefix() -> str:
        prompt = f"<conversation>\n{serialize_within(plan.turn_prefix_messages, chars)}\n</conversation>\n\n"
        prompt += TURN_PREFIX_INSTRUCTIONS
        return await _call(complete, SYSTEM_PROMPT, prompt, prefix_tokens, "Turn prefix summarization failed")

    if plan.is_split_turn and plan.turn_prefix_messages:
        hist, pre = await asyncio.gather(history(), prefix())
        summary = f"{hist}\n\n---\n\n**Turn Context (split turn):**\n\n{pre}"
    else:
        summary = await history()
    details = plan.file_ops.details()
    return summary + _file_blocks(details), details


async def summarize_branch(
    messages: Sequence[AgentMessage], file_ops: FileOps, complete: Complete, custom_instructions: str | None = None
) -> tuple[str, dict[str, list[str]]]:
    if not messages:
        return "No content to summarize", file_ops.details()
    prompt = f"<conversation>\n{serialize_conversation(messages)}\n</conversation>\n\n"
    prompt += _with_focus(BRANCH_INSTRUCTIONS, custom_instructions)
    text = await _call(complete, SYSTEM_PROMPT, prompt, 2048, "Branch summary failed")
    details = file_ops.details()
    return BRANCH_SUMMARY_PREAMBLE + text + _file_blocks(details), details


async def _call(complete: Complete, system: str, prompt: str, max_tokens: int, what: str) -> str:
    try:
        text = await complete(system, prompt, max_tokens)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # the provider layer already classified it; keep its words
        raise SummaryError(f"{what}: {err}") from err
    if not text or not text.strip():
        raise SummaryError(f"{what}: the model returned an empty summary")
    return text.strip()
