"""Which rows the tree shows: a filter mode (what kinds of entry), and a query typed after `/`.

The filter modes ("default" hides settings entries, "no-tools", "user-only", "labeled", "all") are a
byte per slot of the controller's ``TreeIndex`` (``mode_mask``), made by translating its kinds
column through a 256-byte table, so a 1M-entry tree is filtered in one step.

A query narrows the tree to the rows matching every word (case-insensitive substrings of the
preview, the label and the role). Non-matching ancestors are collapsed, not listed: a match deep in
a long chain is one row, not the chain above it. The only other rows kept are the fork points
where matches on different branches meet, so the drawing still says which branch each match is on;
the view dims those (``QueryResult.context``). The previews are searched where the index keeps
them, one buffer for the whole tree: a word made of ASCII is found case-insensitively by one
regular expression over the buffer; the rows whose preview is not ASCII are also checked one by one
with ``str.lower`` (what the words mean there), so a 1M-entry tree is searched in well under a
second and nothing is lower-cased in advance.

Typing a query after `/` (``QueryTyping``): keys edit the query instead of running the tree's
bindings, and keys typed while a pass over a big tree runs are applied together by the next pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from textual import events

from treechat.storage.base import TreeRow
from treechat.storage.tree.columns import DEAD
from treechat.storage.tree.index import TreeSnapshot

FILTERS = ("default", "no-tools", "user-only", "labeled", "all")
SETTINGS_TYPES = frozenset(
    {"thinking_level_change", "model_change", "active_tools_change", "session_info", "custom", "label"}
)


def row_kind(row: TreeRow) -> str:
    """The colour class of a row: user, assistant, tool, summary, settings or other."""
    if row.type == "message":
        role = row.role or ""
        if role == "user":
            return "user"
        if role == "assistant":
            return "assistant"
        if role in ("toolResult", "bashExecution"):
            return "tool"
        if role in ("branchSummary", "compactionSummary"):
            return "summary"
        return "other"
    if row.type in ("compaction", "branch_summary"):
        return "summary"
    if row.type in SETTINGS_TYPES:
        return "settings"
    return "other"


_TOOL_ROLES = ("toolResult", "bashExecution")


def visibility(mode: str) -> tuple[frozenset[str], Callable[[TreeRow], bool] | None]:
    """(hidden types, extra predicate or None): the same answer as ``row_visible`` in a form the
    flattening loop can test cheaply (a set lookup on the type for the common modes)."""
    hidden = frozenset({"leaf"}) if mode == "all" else SETTINGS_TYPES | {"leaf"}
    if mode == "no-tools":
        return hidden, lambda r: not (r.type == "message" and r.role in _TOOL_ROLES)
    if mode == "user-only":
        return hidden, lambda r: r.type == "message" and r.role == "user"
    if mode == "labeled":
        return hidden, lambda r: bool(r.label)
    return hidden, None


def visibility_table(mode: str, kinds: Sequence[tuple[str, str | None, str | None]]) -> bytes:
    """``row_visible`` per kind code of a ``TreeIndex`` (256 bytes, for ``bytes.translate``); in
    "labeled" mode a kind shows if a row of it with a label would."""
    label = "x" if mode == "labeled" else None
    table = bytearray(256)
    for code, (type_, role, status) in enumerate(kinds[:256]):
        table[code] = row_visible(TreeRow("", None, type_, role, "", "", label, status), mode)
    if len(kinds) > 256:  # a two-byte kinds column: the table covers every code
        table.extend(row_visible(TreeRow("", None, t, r, "", "", label, s), mode) for t, r, s in kinds[256:])
    return bytes(table)


def mode_mask(index: TreeSnapshot, mode: str) -> bytearray:
    """1 per slot of the index the filter mode shows (dead slots: 0)."""
    table = visibility_table(mode, index.kind_table)
    kinds = index.kinds
    if mode == "labeled":
        mask = bytearray(index.size)
        for entry_id in index.labels:
            s = index.slot(entry_id)
            if s is not None and table[kinds[s]]:
                mask[s] = 1
        return mask
    if kinds.typecode == "B":
        mask = bytearray(kinds.tobytes().translate(table))
    else:
        mask = bytearray(map(table.__getitem__, kinds))
    for d in index.dead_slots:
        mask[d] = 0
    return mask


def shows(index: TreeSnapshot, mode: str, slot: int) -> int:
    """The mode's answer for one slot (a row that just arrived)."""
    shown = visibility_table(mode, index.kind_table)[index.kinds[slot]]
    if mode == "labeled":
        return shown if index.label_at(slot) else 0
    return shown


def row_visible(row: TreeRow, mode: str) -> bool:
    """Whether the filter mode shows this row (``leaf`` entries never show)."""
    if row.type == "leaf":
        return False
    if mode == "all":
        return True
    if row.type in SETTINGS_TYPES:
        return False
    if mode == "no-tools":
        return row_kind(row) != "tool"
    if mode == "user-only":
        return row.type == "message" and row.role == "user"
    if mode == "labeled":
        return bool(row.label)
    return True


# ------------------------------------------------------------------ a query


_NON_ASCII = re.compile(rb"[\x80-\xff]")


def query_words(query: str) -> list[str]:
    return query.lower().split()


class QueryResult(NamedTuple):
    matches: frozenset[int]
    context: frozenset[int]  # fork points kept for the drawing that do not match themselves


def _non_ascii_slots(index: TreeSnapshot) -> list[int]:
    previews = index.previews
    buf = previews.buf
    if buf.isascii():
        return []
    out: list[int] = []
    at = 0
    while True:
        m = _NON_ASCII.search(buf, at)
        if m is None:
            return out
        slot = previews.slot_at(m.start())
        out.append(slot)
        at = previews.span(slot)[1] + 1


def _preview_hits(index: TreeSnapshot, word: str, non_ascii: list[int]) -> set[int]:
    previews = index.previews
    hits: set[int] = set()
    if word.isascii():
        pattern = re.compile(re.escape(word.encode()), re.IGNORECASE)
        buf, at = previews.buf, 0
        while True:
            m = pattern.search(buf, at)
            if m is None:
                break
            slot = previews.slot_at(m.start())
            hits.add(slot)
            at = previews.span(slot)[1] + 1
    for slot in non_ascii:
        if word in previews.get(slot).lower():
            hits.add(slot)
    return hits


def matching(index: TreeSnapshot, words: list[str]) -> set[int]:
    """The live slots whose preview, label or role (type for other entries) holds every word."""
    non_ascii = _non_ascii_slots(index)
    found: set[int] | None = None
    for word in words:
        hits = _preview_hits(index, word, non_ascii)
        for entry_id, label in index.labels.items():
            if word in label.lower():
                slot = index.slot(entry_id)
                if slot is not None:
                    hits.add(slot)
        codes = {code for code, (type_, role, _) in enumerate(index.kind_table) if word in (role or type_).lower()}
        if codes:
            kinds = index.kinds
            hits.update(s for s in range(index.size) if kinds[s] in codes)
        found = hits if found is None else found & hits
        if not found:
            return set()
    parents = index.parents
    return {s for s in found or () if parents[s] != DEAD}


def narrow(index: TreeSnapshot, words: list[str], shown: bytes | bytearray) -> QueryResult:
    """The rows a query keeps: every match the filter mode shows (`shown`: a byte per slot), plus
    the fork points where two matches' paths meet. O(rows): each ancestor is walked once,
    whatever the number of matches."""
    matches = sorted(s for s in matching(index, words) if shown[s])
    matched = frozenset(matches)
    parents = index.parents
    # via[p] = the child of p through which the first match reached it; a second, different child
    # makes p a fork. A walk stops where an earlier one passed: every row is walked once (and a
    # parent cycle ends the walk, since its rows are marked on the first turn).
    via: dict[int, int] = {}
    forks: set[int] = set()
    for slot in matches:
        child, pid = slot, parents[slot]
        while pid >= 0:
            seen = via.get(pid)
            if seen is not None:
                if seen != child:
                    forks.add(pid)
                break
            via[pid] = child
            child, pid = pid, parents[pid]
    context = frozenset(f for f in forks if f not in matched and shown[f])
    return QueryResult(matched, context)


def find_spans(text: str, words: Sequence[str]) -> list[tuple[int, int]]:
    """Where the query's words are in a drawn text: sorted, merged (start, end) spans."""
    if not words:
        return []
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two ("İ"): keep the offsets
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = low.find(word)
        while start != -1:
            spans.append((start, start + len(word)))
            start = low.find(word, start + len(word))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


class QueryTyping:
    def __init__(self, current: Callable[[], str], apply: Callable[[str], None],
                 schedule: Callable[[Callable[[], None]], object], changed: Callable[[], None]) -> None:
        self._current, self._apply, self._schedule, self._changed = current, apply, schedule, changed
        self.active = False  # "/" was pressed: printable keys edit the query
        self._pending: str | None = None  # typed, not applied yet

    @property
    def text(self) -> str:
        """The query as typed so far (applied or not)."""
        return self._pending if self._pending is not None else self._current()

    def start(self) -> None:
        self.active = True
        self._changed()

    def stop(self) -> None:
        self.active = False
        self._pending = None

    def key(self, event: events.Key) -> bool:
        """Handle a key while typing; False when not typing (the key is the tree's)."""
        if not self.active:
            return False
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self.stop()
            self._apply("")
        elif event.key == "enter":
            self.flush()
            self.active = False
            self._changed()
        elif event.key == "backspace":
            self._edit(self.text[:-1])
        elif event.is_printable and event.character:
            self._edit(self.text + event.character)
        return True

    def _edit(self, text: str) -> None:
        scheduled = self._pending is not None
        self._pending = text
        self._changed()
        if not scheduled:
            self._schedule(self.flush)

    def flush(self) -> None:
        text, self._pending = self._pending, None
        if text is not None and text != self._current():
            self._apply(text)
