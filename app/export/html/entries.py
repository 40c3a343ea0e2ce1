"""One session entry as the page's data: a record with the tree fields, a pre-rendered body
and the few facts the page script shows in headers (model, usage, tool, compaction tokens).

Record layout (a JSON array, positional to keep a 100k-entry page small; page.js reads the same
indexes): ``[id, parentId, type, role, timestamp, preview, bodyHtml, extra]``. The body is HTML
built here with every text escaped (render.py); ``preview`` and ``extra`` are plain strings and
numbers that the script puts on the page as text, never as markup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from treechat.storage.aggregates import entry_preview, entry_role
from treechat.storage.json_types import Json, JsonObject
from treechat.storage.model import (
    ActiveToolsChangeEntry,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    CompactionEntry,
    ContentBlock,
    CustomEntry,
    CustomMessage,
    Entry,
    ImageContent,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    TextContent,
    ThinkingContent,
    ThinkingLevelChangeEntry,
    ToolCall,
    ToolResultMessage,
    UnknownEntry,
    UserMessage,
    dump,
)
from treechat.text.sanitize import sanitize_line

from ...session.context import entry_to_message
from .diffs import checkpoint_html, details_diff, diff_html
from .render import Renderer, esc, json_text, plain

if TYPE_CHECKING:
    from ...agent.types import AgentMessage

PREVIEW_CHARS = 100
# Tool output longer than this is shown cut, with a "show all" button (the full text is in the page).
CLIP_LINES = 20
CLIP_CHARS = 2_000
DATA_LIMIT = 4_000  # stored extension data / unknown entries: enough to see what it is
_IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")

Record = list[Json]  # [id, parent, type, role, timestamp, preview, body html, extra]


def line(text: object, limit: int) -> str:
    return sanitize_line(text, limit)


def entry_record(entry: Entry, renderer: Renderer, kept: Sequence[str] | None = None) -> Record:
    """The page record of one entry. `kept`: for a compaction, the ids its kept range holds (the
    messages that stayed in the model's context beside the summary)."""
    body, extra = _body_and_extra(entry, renderer)
    if kept is not None:
        extra["kept"] = list(kept)
    return [entry.id, entry.parent_id, entry.type, entry_role(entry), entry.timestamp,
            line(entry_preview(entry), PREVIEW_CHARS), body, extra]


def _body_and_extra(entry: Entry, r: Renderer) -> tuple[str, JsonObject]:
    if isinstance(entry, CompactionEntry):
        extra: JsonObject = {"tokensBefore": entry.tokens_before}
        if entry.tokens_after is not None:
            extra["tokensAfter"] = entry.tokens_after
        if entry.trigger:
            extra["trigger"] = line(entry.trigger, 40)
        return r.markdown(entry.summary), extra
    if isinstance(entry, BranchSummaryEntry):
        return r.markdown(entry.summary), {"from": entry.from_id}
    if isinstance(entry, ModelChangeEntry):
        return "", {"model": line(f"{entry.provider}/{entry.model_id}", 120)}
    if isinstance(entry, (ThinkingLevelChangeEntry, ActiveToolsChangeEntry)):
        return "", {}  # the page shows their preview ("thinking: high", "tools: read, bash")
    if isinstance(entry, LabelEntry):
        return "", {"target": entry.target_id, "label": line(entry.label, 200) if entry.label else None}
    if isinstance(entry, SessionInfoEntry):
        return "", {"name": line(entry.name, 200) if entry.name else None}
    if isinstance(entry, LeafEntry):
        return "", {"target": entry.target_id}
    if isinstance(entry, CustomEntry):
        body = checkpoint_html(entry) or _data_block("data", entry.data)
        return body, {"customType": line(entry.custom_type, 60)}
    if isinstance(entry, UnknownEntry):
        return _data_block(f"entry of unknown type “{line(entry.type, 40)}”", dump(entry)), {}
    if isinstance(entry, MessageEntry):
        return _message(entry.message, r)
    # custom_message entries: the message the app builds from them (entry_to_message's rules)
    msg = entry_to_message(entry)
    if msg is not None:
        return _message(msg, r)
    return "", {}


def _message(msg: AgentMessage, r: Renderer) -> tuple[str, JsonObject]:
    if isinstance(msg, UserMessage):
        return _blocks_plain(msg.content), {}
    if isinstance(msg, AssistantMessage):
        return _assistant(msg, r)
    if isinstance(msg, ToolResultMessage):
        extra: JsonObject = {"tool": line(msg.tool_name, 60)}
        if msg.is_error:
            extra["error"] = True
        text = "\n".join(b.text for b in msg.content if isinstance(b, TextContent))
        parts = [_clipped(text)] if text else []
        parts += [_image(b) for b in msg.content if isinstance(b, ImageContent)]
        change = None if msg.is_error else details_diff(msg.tool_name, msg.details)
        if change is not None:
            parts.append(diff_html(*change))
        return "".join(parts), extra
    if isinstance(msg, BashExecutionMessage):
        extra = {}
        if msg.exit_code is not None:
            extra["exitCode"] = msg.exit_code
        if msg.cancelled:
            extra["cancelled"] = True
        body = f'<pre class="cmd">$ {esc(msg.command)}</pre>' + (_clipped(msg.output) if msg.output else "")
        if msg.truncated:
            body += '<p class="note">(output was truncated when it was stored)</p>'
        return body, extra
    if isinstance(msg, CustomMessage):
        extra = {"customType": line(msg.custom_type, 60)}
        if not msg.display:
            extra["hidden"] = True
        body = _blocks_plain(msg.content)
        if msg.details is not None:
            body += _data_block("details", msg.details)
        return body, extra
    role = getattr(msg, "role", "?")
    return _data_block(f"message of unknown role “{line(role, 40)}”", msg.model_dump(mode="json")), {}


def _assistant(msg: AssistantMessage, r: Renderer) -> tuple[str, JsonObject]:
    u = msg.usage
    extra: JsonObject = {
        "model": line(f"{msg.provider}/{msg.model}" if msg.provider else msg.model, 120),
        "usage": [u.input, u.output, u.cache_read, u.cache_write, round(u.cost.total, 8)],
    }
    if msg.stop_reason != "stop":
        extra["stop"] = msg.stop_reason
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            parts.append(r.markdown("\n\n".join(run)))
            run.clear()

    for block in msg.content:
        if isinstance(block, TextContent):
            run.append(block.text)
            continue
        flush()
        if isinstance(block, ThinkingContent):
            size = f"{len(block.thinking):,} characters" if block.thinking else "redacted"
            parts.append(f'<details class="thinking"><summary>thinking · {size}</summary>'
                         f'{plain(block.thinking)}</details>')
        elif isinstance(block, ToolCall):
            parts.append(_tool_call(block))
        elif isinstance(block, ImageContent):
            parts.append(_image(block))
        else:
            parts.append(_data_block(f"content of unknown type “{line(block.type, 40)}”", dump(block)))
    flush()
    if msg.stop_reason == "error":
        parts.append(f'<p class="stop error">✖ error: {esc(msg.error_message or "the request failed")}</p>')
    elif msg.stop_reason == "aborted":
        why = f" — {esc(msg.error_message)}" if msg.error_message else ""
        parts.append(f'<p class="stop aborted">⏸ stopped{why}</p>')
    elif msg.stop_reason == "length":
        parts.append('<p class="stop aborted">✂ cut at the output token limit</p>')
    return "".join(parts), extra


def _tool_call(call: ToolCall) -> str:
    args = call.arguments or {}
    first = next(iter(args.values()), "") if len(args) == 1 else json_text(args, 200)
    summary = f'⚙ <b>{esc(line(call.name, 60))}</b> <span class="arg">{esc(line(first, 120))}</span>'
    # Plain, not highlighted: a session has as many calls as replies, and Pygments on each call's
    # JSON cost 10% of a 100k-entry export and 15% of its size for little gain in reading.
    return f'<details class="call"><summary>{summary}</summary><pre>{esc(json_text(args, 200_000))}</pre></details>'


def _blocks_plain(content: str | list[ContentBlock]) -> str:
    if isinstance(content, str):
        return plain(content) if content else ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(plain(block.text))
        elif isinstance(block, ImageContent):
            parts.append(_image(block))
        elif isinstance(block, ThinkingContent):
            parts.append(plain(block.thinking, "text thinking-text"))
        else:
            parts.append(_data_block(f"content of unknown type “{line(getattr(block, 'type', '?'), 40)}”",
                                     dump(block)))
    return "".join(parts)


def _clipped(text: str) -> str:
    """Tool output: all of it in the page, shown cut to CLIP_LINES until "show all" is pressed."""
    lines = text.count("\n") + 1
    pre = f'<pre class="out">{esc(text)}</pre>'
    if lines <= CLIP_LINES and len(text) <= CLIP_CHARS:
        return pre
    return (f'<div class="clip">{pre}</div>'
            f'<button type="button" class="show-all">show all · {lines:,} lines · {len(text):,} characters</button>')


def _image(block: ImageContent) -> str:
    """A stored image, inline as a data: URL (the only kind the page's CSP lets an <img> load)."""
    mime = block.mime_type.lower().strip()
    if mime not in _IMAGE_TYPES or not _BASE64.fullmatch(block.data):
        return f'<p class="note">[image of type {esc(line(block.mime_type, 40))} not shown]</p>'
    data = "".join(block.data.split())
    return f'<img class="attachment" alt="attached image ({mime})" src="data:{mime};base64,{data}">'


def _data_block(title: str, value: object) -> str:
    if value is None:
        return ""
    return f'<details class="data"><summary>{esc(title)}</summary><pre>{esc(json_text(value, DATA_LIMIT))}</pre></details>'
