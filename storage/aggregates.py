"""Pure functions every backend shares: how one entry changes the aggregates, previews, text.

They are written once, on `views.EntryView` (decoded from JSON without pydantic), so that a bulk
import, a lazily opened JSONL file and an incremental SQLite append all compute the same values.
The `Entry`-taking names (`tree_row`, `entry_preview`, `advance_path_state`, …) are thin wrappers.

Path state is also available as a plain tuple (`StateTuple`, `advance_state`): a 100k-entry
import computes 100k states, and building frozen dataclasses with `replace` cost ~2 s of that.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .base import PathState, SessionStats, TreeRow
from .model_lite import iso_to_ms
from .on_demand import view_of_entry
from .views import Block, EntryView, MessageView

if TYPE_CHECKING:  # (annotations only: a streamed import runs without pydantic's models)
    from .model import Entry

PREVIEW_CHARS = 120

# (depth, message_count, input, output, cache_read, cache_write, cost, context_tokens, model,
#  thinking_level, active_tool_names): PathState's fields in order.
StateTuple = tuple[int, int, int, int, int, int, float, int, dict[str, str] | None, str, list[str] | None]
EMPTY_STATE: StateTuple = (0, 0, 0, 0, 0, 0, 0.0, 0, None, "off", None)
_KNOWN_ROLES = {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}


def _usage(msg: MessageView) -> tuple[int, int, int, int, int, float]:
    u = msg.usage
    if u is None:
        return 0, 0, 0, 0, 0, 0.0
    return u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, (u.cost.total if u.cost else 0.0)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def advance_state(s: StateTuple, v: EntryView) -> StateTuple:
    """The state at `v`, given the state at its parent (build_session_context's rules)."""
    t = v.type
    depth = s[0] + 1
    if t == "message":
        msg = v.message
        if msg is not None and msg.role == "assistant":
            i, o, cr, cw, total, cost = _usage(msg)
            ctx = 0 if msg.stop_reason in ("error", "aborted") else (total or i + o + cr + cw)
            model = {"provider": _str(msg.provider), "modelId": _str(msg.model)}
            return (depth, s[1] + 1, s[2] + i, s[3] + o, s[4] + cr, s[5] + cw, s[6] + cost, ctx or s[7], model,
                    s[9], s[10])
        if msg is not None and msg.usage is not None:  # a sub-agent's spending (the task tool's result)
            i, o, cr, cw, _total, cost = _usage(msg)
            return (depth, s[1] + 1, s[2] + i, s[3] + o, s[4] + cr, s[5] + cw, s[6] + cost, *s[7:])
        return (depth, s[1] + 1, *s[2:])
    if t == "thinking_level_change" and isinstance(v.thinking_level, str):
        return (depth, *s[1:9], v.thinking_level, s[10])
    if t == "model_change" and isinstance(v.provider, str) and isinstance(v.model_id, str):
        return (depth, *s[1:8], {"provider": v.provider, "modelId": v.model_id}, *s[9:])
    if v.active_tool_names is not None and t in ("active_tools_change", "custom"):  # (custom: model.TOOLS_RECORD)
        return (depth, *s[1:10], list(v.active_tool_names))
    return (depth, *s[1:])


def state_tuple(state: PathState) -> StateTuple:
    return (state.depth, state.message_count, state.input_tokens, state.output_tokens, state.cache_read_tokens,
            state.cache_write_tokens, state.cost_total, state.context_tokens, state.model, state.thinking_level,
            state.active_tool_names)


def path_state(s: StateTuple) -> PathState:
    return PathState(*s)


def advance_path_state(state: PathState, entry: Entry) -> PathState:
    """The PathState at `entry`, given the state at its parent."""
    return PathState(*advance_state(state_tuple(state), view_of_entry(entry)))


class StatsAccumulator:
    """Whole-session aggregates, accumulated in place (one entry at a time, leaf markers excluded)."""

    __slots__ = ("entries", "messages", "users", "assistants", "tool_results", "input", "output", "cache_read",
                 "cache_write", "total", "cost")

    def __init__(self, stats: SessionStats | None = None) -> None:
        s = stats or SessionStats()
        self.entries, self.messages, self.users = s.entry_count, s.message_count, s.user_messages
        self.assistants, self.tool_results = s.assistant_messages, s.tool_results
        self.input, self.output, self.cache_read = s.input_tokens, s.output_tokens, s.cache_read_tokens
        self.cache_write, self.total, self.cost = s.cache_write_tokens, s.total_tokens, s.cost_total

    def add(self, v: EntryView) -> None:
        self.entries += 1
        if v.type != "message":
            return
        self.messages += 1
        msg = v.message
        role = msg.role if msg is not None else None
        if role == "user":
            self.users += 1
        elif role == "toolResult":
            self.tool_results += 1
        elif role == "assistant":
            self.assistants += 1
        if msg is not None and role in ("assistant", "toolResult"):  # (a tool result's usage: its sub-agent's)
            i, o, cr, cw, total, cost = _usage(msg)
            self.input += i
            self.output += o
            self.cache_read += cr
            self.cache_write += cw
            self.total += total or i + o + cr + cw
            self.cost += cost

    def stats(self) -> SessionStats:
        return SessionStats(self.entries, self.messages, self.users, self.assistants, self.tool_results, self.input,
                            self.output, self.cache_read, self.cache_write, self.total, self.cost)


def advance_stats(stats: SessionStats, entry: Entry) -> SessionStats:
    """Whole-session aggregates after appending `entry`."""
    acc = StatsAccumulator(stats)
    acc.add(view_of_entry(entry))
    return acc.stats()


# ---------------------------------------------------------------- text


def _text_of(content: str | list[Block] | None, sep: str = "\n") -> str:
    if isinstance(content, str):
        return content
    if content:
        return sep.join(b.text for b in content if b.type == "text" and isinstance(b.text, str))
    return ""


def message_text(msg: MessageView) -> str:
    """All plain text of a message (text blocks joined; summaries; bash command + output)."""
    if msg.content is not None and (msg.role in _KNOWN_ROLES or isinstance(msg.content, str)):
        return _text_of(msg.content)
    if msg.role in ("branchSummary", "compactionSummary"):
        return _str(msg.summary)
    if msg.role == "bashExecution":
        return f"{_str(msg.command)}\n{_str(msg.output)}"
    return ""


def view_text(v: EntryView, plain: str | None = None) -> str:
    """The searchable text of an entry (what a person would look for). `plain`: its message's
    message_text, when the caller has it already."""
    t = v.type
    if t == "message" and v.message is not None:
        msg = v.message
        parts = [plain if plain is not None else message_text(msg)]
        if isinstance(msg.content, list) and msg.role in _KNOWN_ROLES:
            for b in msg.content:
                if b.type == "toolCall":
                    parts.append(f"{_str(b.name)} {b.arguments if b.arguments is not None else {}}")
                elif b.type == "thinking":
                    parts.append(_str(b.thinking))
        if msg.role == "toolResult":
            parts.insert(0, _str(msg.tool_name))
        return "\n".join(p for p in parts if p)
    if t in ("compaction", "branch_summary"):
        return _str(v.summary)
    if t == "custom_message":
        return _text_of(v.content)
    if t == "label":
        return _str(v.label)
    if t == "session_info":
        return _str(v.name)
    return ""


# From the first character that is not whitespace to the line's end (any of str.splitlines'
# boundaries, all of which are whitespace): the first non-empty line, without splitting a long
# text into all its lines (a 32k-character tool result is read only as far as its first line).
_FIRST_LINE = re.compile("\\S[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*")


def _first_line(text: str) -> str:
    """The first non-empty line, stripped, at most PREVIEW_CHARS. A short text is split (C's
    splitlines beats the regex's per-character class there), a long one only searched."""
    if len(text) < 2048:
        for line in text.splitlines():
            line = line.strip()
            if line:
                return line[:PREVIEW_CHARS]
        return ""
    m = _FIRST_LINE.search(text)
    return m.group().rstrip()[:PREVIEW_CHARS] if m else ""


def view_texts(v: EntryView) -> tuple[str, str]:
    """(view_preview(v), view_text(v)), reading a message's text once (an import needs both)."""
    if v.type == "message" and v.message is not None:
        return message_texts(v.message)
    text = view_text(v)
    return view_preview(v, text), text


def message_texts(msg: MessageView) -> tuple[str, str]:
    """(preview, search text) of a message entry, as view_texts: its blocks walked once for message_text, view_text and
    view_preview together (an import does this for every entry; tests/storage/test_entry_texts.py
    holds it to the three functions)."""
    content, role = msg.content, msg.role
    calls: list[str] = []
    if isinstance(content, list) and role in _KNOWN_ROLES:
        said: list[str] = []
        extra: list[str] = []
        for b in content:
            kind = b.type
            if kind == "text":
                if isinstance(b.text, str):
                    said.append(b.text)
            elif kind == "toolCall":
                name = _str(b.name)
                calls.append(name)
                extra.append(f"{name} {b.arguments if b.arguments is not None else {}}")
            elif kind == "thinking":
                extra.append(_str(b.thinking))
        plain = "\n".join(said)
        parts = [plain, *extra]
    else:
        plain = message_text(msg)
        parts = [plain]
    if role == "toolResult":
        parts.insert(0, _str(msg.tool_name))
    text = "\n".join(p for p in parts if p)
    if role == "assistant":
        preview = _first_line(plain)
        if not preview:
            said_calls = ("→ " + ", ".join(calls)) if calls else (
                _str(msg.error_message) or f"({_str(msg.stop_reason) or 'stop'})")
            preview = _first_line(said_calls)
        return preview, text
    if role == "toolResult":
        return _first_line(f"{_str(msg.tool_name)}: {plain.strip()}"), text
    return _first_line(text), text


def view_preview(v: EntryView, text: str | None = None, plain: str | None = None) -> str:
    """One line for the tree: the first non-empty line of the text, or what the entry did.
    `text`, `plain`: its view_text and its message's message_text, when the caller has them."""
    t = v.type
    if t == "thinking_level_change":
        return f"thinking: {_str(v.thinking_level)}"
    if t == "model_change":
        return f"model: {_str(v.provider)}/{_str(v.model_id)}"
    if t == "active_tools_change" or t == "custom" and v.active_tool_names is not None:
        return "tools: " + (", ".join(v.active_tool_names or ()) or "none")
    if t == "label":
        return f"label {_str(v.target_id)}: {_str(v.label) or '(cleared)'}"
    if t == "session_info":
        return f"name: {_str(v.name) or '(cleared)'}"
    if t == "message" and v.message is not None:
        msg = v.message
        if plain is None:
            plain = message_text(msg)
        if msg.role == "assistant":
            said = plain.strip()
            if not said:
                blocks = msg.content if isinstance(msg.content, list) else []
                calls = [_str(b.name) for b in blocks if b.type == "toolCall"]
                said = ("→ " + ", ".join(calls)) if calls else (_str(msg.error_message) or f"({_str(msg.stop_reason) or 'stop'})")
            return _first_line(said)
        if msg.role == "toolResult":
            return _first_line(f"{_str(msg.tool_name)}: {plain.strip()}")
    return _first_line((text if text is not None else view_text(v, plain)).strip())


def first_user_text(v: EntryView) -> str:
    """The text a session list shows for its first user message ('' if this is not one)."""
    if v.type == "message" and v.message is not None and v.message.role == "user":
        return _text_of(v.message.content, " ").strip()
    return ""


def message_ms(v: EntryView) -> float | None:
    """When a user/assistant message was written (Pi's `modified` looks only at those)."""
    msg = v.message
    if v.type != "message" or msg is None or msg.role not in ("user", "assistant"):
        return None
    ts = msg.timestamp
    ms = ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) and _DATES[0] <= ts <= _DATES[1] else None
    if ms is None:  # none, or one no date can hold (1e308 in a damaged file): the entry's own time
        ms = iso_to_ms(v.timestamp)
    return ms if ms == ms else None  # NaN: unparseable


_DATES = (-62135596800000, 253402300799999)  # epoch ms of 0001-01-01 and 9999-12-31: what a date holds


def view_status(v: EntryView) -> str | None:
    """"error" or "aborted" for a reply that failed or was stopped (the tree marks them)."""
    reason = v.message.stop_reason if v.message is not None and v.role == "assistant" else None
    return reason if reason in ("error", "aborted") else None


def view_row(v: EntryView, label: str | None = None, parent_id: str | None = None) -> TreeRow:
    return TreeRow(v.id, parent_id if parent_id is not None else v.parent_id, v.type, v.role, view_preview(v),
                   v.timestamp, label, view_status(v))


# ---------------------------------------------------------------- Entry wrappers


def entry_role(entry: Entry) -> str | None:
    message = getattr(entry, "message", None) if entry.type == "message" else None
    role = getattr(message, "role", None)
    return role if isinstance(role, str) else None


def entry_text(entry: Entry) -> str:
    return view_text(view_of_entry(entry))


def entry_preview(entry: Entry) -> str:
    return view_preview(view_of_entry(entry))


def tree_row(entry: Entry, label: str | None = None) -> TreeRow:
    return view_row(view_of_entry(entry), label)
