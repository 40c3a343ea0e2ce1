"""The rows both SQL backends write and read, whoever writes them (an append, a bulk load, a
streamed import): an entry, a PathState or SessionStats as column values and back, and the text
the search index holds. SQLite and PostgreSQL have the same tables (their migrations); each writes
these values with its own statements."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import aggregates
from ..base import PathState, SessionStats
from ..gc_policy import paused
from ..json_types import Row
from ..model_lite import entry_json, iso_to_ms
from ..on_demand import parse_entries_json, view_of_entry
from ..views import EntryView

if TYPE_CHECKING:  # (annotations only: a streamed import runs without pydantic's models)
    from ..model import Entry

# The search index holds the first 32k characters of each entry's text. A huge tool result
# (a whole file, a long build log) is findable by its beginning only: that bounds the work of
# one append (tokenizing 32k characters into trigrams costs about 3 ms) and the index size.
SEARCH_TEXT_LIMIT = 32 * 1024


def search_text(entry: Entry) -> str:
    """What the search index holds for an entry ('' for nothing)."""
    return aggregates.entry_text(entry)[:SEARCH_TEXT_LIMIT]


def view_search_text(view: EntryView) -> str:
    return aggregates.view_text(view)[:SEARCH_TEXT_LIMIT]

# Columns of entry_materialized after (branch_id, depth, ctx_start_depth), in PathState order.
STATE_COLUMNS = (
    "message_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
    " cost_total, context_tokens, model, thinking_level, active_tool_names"
)
STATS_FIELDS = (
    "entry_count",
    "message_count",
    "user_messages",
    "assistant_messages",
    "tool_results",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
    "cost_total",
)
STATS_COLUMNS = ", ".join(STATS_FIELDS)


def entry_row(seq: int | None, session_id: str, entry: Entry) -> Row:
    return view_row(seq, session_id, view_of_entry(entry), entry_json(entry))


def view_row(seq: int | None, session_id: str, v: EntryView, payload: str, preview: str | None = None) -> Row:
    target = v.target_id if v.type in ("label", "leaf") and isinstance(v.target_id, str) else None
    return (seq, session_id, v.id, v.parent_id, v.type, v.role, v.timestamp,
            aggregates.view_preview(v) if preview is None else preview, target, payload, aggregates.view_status(v))


def view_row_and_text(seq: int, session_id: str, v: EntryView, payload: str) -> tuple[Row, str]:
    """The entry row and the search text of a view (its text read once: an import needs both)."""
    t, msg = v.type, v.message
    if t == "message" and msg is not None:  # nearly every entry: view_row's values, inline
        preview, text = aggregates.message_texts(msg)
        role = msg.role if isinstance(msg.role, str) else None
        reason = msg.stop_reason if role == "assistant" and msg.stop_reason in ("error", "aborted") else None
        return (seq, session_id, v.id, v.parent_id, t, role, v.timestamp, preview, None, payload,
                reason), text[:SEARCH_TEXT_LIMIT]
    if t == "leaf":
        return view_row(seq, session_id, v, payload), ""
    preview, text = aggregates.view_texts(v)
    return view_row(seq, session_id, v, payload, preview), text[:SEARCH_TEXT_LIMIT]


# A read validates a few dozen KB of payloads at a time: one string of a whole path (17 MB at 1M
# entries) raised glibc's mmap and trim thresholds on its free, and the connection thread's malloc
# arena then kept ~50 MB it no longer used (`treechat context` at 1M: 282 MB peak against 233 MB
# in parts).
_PART_CHARS = 1 << 16


def entries_of(payloads: Sequence[Sequence[str]]) -> list[Entry]:
    """The entries a read hands out, from rows whose first column is the payload: a read's moment
    of the GC policy (gc_policy.paused, keep: they are handed out and kept).

    One validation call per part of the array is several times faster than parse_entry per row;
    with the cyclic GC paused, another 3-4x (thousands of new models, no cycles among them). SQLite
    calls it on the connection's thread, right after SQLite made the rows: the payloads are still
    in that core's cache, and the event loop's thread wakes once, for the entries (validating them
    there after the hop back made a 2,700-entry path's open + context ~10% slower, and the next
    trip to the connection slower still). The GIL is held either way."""
    if not payloads:
        return []
    out: list[Entry] = []
    with paused(keep=True):
        start, size = 0, 0
        for end, row in enumerate(payloads, 1):
            size += len(row[0])
            if size >= _PART_CHARS or end == len(payloads):
                out += parse_entries_json("[" + ",".join(p[0] for p in payloads[start:end]) + "]", start)
                start, size = end, 0
    return out


def state_values(state: PathState) -> Row:
    return (
        state.message_count,
        state.input_tokens,
        state.output_tokens,
        state.cache_read_tokens,
        state.cache_write_tokens,
        state.cost_total,
        state.context_tokens,
        json.dumps(state.model) if state.model is not None else None,
        state.thinking_level,
        json.dumps(state.active_tool_names) if state.active_tool_names is not None else None,
    )


def state_tuple_values(s: aggregates.StateTuple) -> Row:
    """entry_materialized's state columns (STATE_COLUMNS order) of a state tuple."""
    return (s[1], s[2], s[3], s[4], s[5], s[6], s[7], model_json(s[8]) if s[8] is not None else None, s[9],
            json.dumps(s[10]) if s[10] is not None else None)


_MODEL_JSON: dict[tuple[tuple[str, str], ...], str] = {}


def model_json(model: dict[str, str]) -> str:
    """json.dumps of a state's model ({"provider", "modelId"}), remembered: a session names a few
    models, and a 1M-entry load would otherwise serialize the same one a million times."""
    try:
        key = tuple(model.items())
        found = _MODEL_JSON.get(key)
    except (AttributeError, TypeError):  # not a dict of plain values: as it is
        return json.dumps(model)
    if found is None:
        if len(_MODEL_JSON) >= 256:
            _MODEL_JSON.clear()
        found = _MODEL_JSON[key] = json.dumps(model)
    return found


def state_from(depth: int, values: Sequence[Any]) -> PathState:
    """Inverse of state_values (values as selected with STATE_COLUMNS)."""
    return PathState(
        depth=depth,
        message_count=values[0],
        input_tokens=values[1],
        output_tokens=values[2],
        cache_read_tokens=values[3],
        cache_write_tokens=values[4],
        cost_total=values[5],
        context_tokens=values[6],
        model=json.loads(values[7]) if values[7] is not None else None,
        thinking_level=values[8],
        active_tool_names=json.loads(values[9]) if values[9] is not None else None,
    )


def state_tuple_from(depth: int, values: Sequence[Any]) -> aggregates.StateTuple:
    """state_from as a plain tuple (aggregates.StateTuple)."""
    return aggregates.state_tuple(state_from(depth, values))


def stats_values(stats: SessionStats) -> tuple[int | float, ...]:
    return tuple(getattr(stats, f) for f in STATS_FIELDS)


def stats_from(values: Sequence[Any]) -> SessionStats:
    return SessionStats(**dict(zip(STATS_FIELDS, values)))


def first_user_text(entry: Entry) -> str:
    """The text a session list shows for its first user message ('' if this is not one)."""
    return aggregates.first_user_text(view_of_entry(entry))


def message_ms(entry: Entry) -> float | None:
    """When a user/assistant message was written (Pi's `modified` looks only at those)."""
    return aggregates.message_ms(view_of_entry(entry))


def iso_ms_or_zero(iso: str) -> float:
    ms = iso_to_ms(iso)
    return float(ms) if ms == ms else 0.0
