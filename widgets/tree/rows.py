"""How one tree row looks and whether a filter shows it (pure functions; ``TreeView`` draws).

The filter modes, the colour class of a row, and the connector drawing of a line's gutter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from treechat.storage.base import TreeRow
from treechat.storage.tree.index import TreeSnapshot

FILTERS = ("default", "no-tools", "user-only", "labeled", "all")
SETTINGS_TYPES = frozenset(
    {"thinking_level_change", "model_change", "active_tools_change", "session_info", "custom", "label"}
)
# Connector of a line: the first line of a fork child gets ├─ or └─; others continue the gutter.
NONE, TEE, ELBOW = 0, 1, 2

Gutter = tuple  # (continues: bool, outer: Gutter | None, depth: int)


# A display line is a plain tuple (a NamedTuple costs ~30% of a 100k rebuild):
# (row, gutter, connector, child_count, folded) — child_count is the number of visible children.
Line = tuple
ROW, GUTTER, CONNECTOR, CHILDREN, FOLDED = range(5)


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


def row_glyph(row: TreeRow) -> tuple[str, str] | None:
    """(glyph, colour class) of the gutter mark that says what happened to a row, the most
    important first: an error or aborted reply, a compaction, a branch summary, a label.

    The reply's stop reason comes as ``row.status`` ("error" | "aborted" | None) where the storage
    provides it (read with ``getattr`` so rows without the field draw the same)."""
    status = getattr(row, "status", None)
    if status == "error":
        return "✗", "error"
    if status == "aborted":
        return "⊘", "aborted"
    if row.type == "compaction" or (row.type == "message" and row.role == "compactionSummary"):
        return "≡", "summary"
    if row.type == "branch_summary" or (row.type == "message" and row.role == "branchSummary"):
        return "↩", "summary"
    if row.label:
        return "⚑", "label"
    return None


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


def gutter_prefix(gutter: Gutter | None, connector: int, max_levels: int) -> str:
    """The connector drawing of a line, at most ``max_levels`` levels wide (``⋯`` marks the cut)."""
    if gutter is None:
        return ""
    bits: list[bool] = []
    node: Gutter | None = gutter
    while node is not None and len(bits) < max_levels:
        bits.append(node[0])
        node = node[1]
    bits.reverse()
    parts = ["│ " if b else "  " for b in bits[:-1]]
    if connector == TEE:
        parts.append("├─")
    elif connector == ELBOW:
        parts.append("└─")
    else:
        parts.append("│ " if bits[-1] else "  ")
    if node is not None:
        parts[0] = "⋯ "
    return "".join(parts)
