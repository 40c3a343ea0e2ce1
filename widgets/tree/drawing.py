"""How the tree's lines are drawn (``TreeView.render_line`` hands in what it knows about each line).

A line is a fixed three-cell gutter, then the connector drawing, then the text:

    ┃⚑ ├─asst: [A-done] Approach A done, the tests pass an…
    ││└ glyph: a spinner frame (⠋⠙…) a run goes from here, ✗ error, ⊘ aborted, ≡ compaction,
    ││         ↩ branch summary, ⚑ label, ⇲ a sub-agent's result (o or Enter opens its session)
    │└ path: ● the leaf, ○ the leaf is hidden below this row, ┃ on the active path

A running branch's marker is on its tip's row, or on the nearest row shown above it (a filter or
a fold hides the tip); it takes the glyph's cell while the run goes.

The gutter is never cut, so the leaf and the active path show at any width; the text is cut to the
width with an ellipsis. The cursor row gets its background and one contrasting text colour over
every cell, whatever the row's colours (the style says which, focused or not).

``LineDrawing`` is ``TreeView.render_line``'s work for one line: what ``paint`` is told about it (its
look), and a cache of the painted lines by everything they show, so a line drawn before is not
painted again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence, Set
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from treechat.storage.base import TreeRow

from .filter import find_spans, query_words, row_kind
from .layout import CONNECTOR, ELBOW, FOLDED, GUTTER, NONE, ROW, TEE, ActivePath, Gutter, Line, TreeLayout

GUTTER_WIDTH = 3
MIN_TEXT = 12  # connector levels give way before the text gets narrower than this
MAX_LEVELS = 12  # deeper fork nesting is drawn as "⋯" so the text stays on screen
ROLE_TAG = {"user": "user: ", "assistant": "asst: ", "tool": "tool: ", "summary": "", "settings": ""}
TYPE_TAG = {"compaction": "compaction: ", "branch_summary": "branch summary: "}


class Look(NamedTuple):
    """What the view knows about a line beyond the layout."""

    leaf: str  # "" | "here" (the leaf) | "below" (the leaf is hidden under this row)
    active: bool  # on the path root -> leaf
    cursor: bool
    hidden: int  # rows under a fold (folded lines) or alternatives the filter hides (others)
    dim: bool  # a fork point a query keeps only for the drawing
    words: tuple[str, ...]  # the query's words, highlighted
    running: str = ""  # the spinner's frame when a run goes from this row ("" none)


def levels_for(width: int) -> int:
    """How many connector levels fit while the text keeps at least MIN_TEXT cells."""
    return max(1, min(MAX_LEVELS, (width - GUTTER_WIDTH - MIN_TEXT) // 2))


def row_tag(row: TreeRow) -> str:
    """What the text starts with: the role of a message, the kind of a summary."""
    return ROLE_TAG.get(row_kind(row), "") if row.type == "message" else TYPE_TAG.get(row.type, "")


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
    if is_subagent_row(row):
        return "⇲", "fold"
    return None


SUBAGENT_PREVIEW = "task: "  # how a `task` tool's result's row starts (storage: "<tool name>: <its text>")


def is_subagent_row(row: TreeRow) -> bool:
    """A sub-agent's result (the `task` tool's): its row opens the sub-agent's session."""
    return row.type == "message" and row.role == "toolResult" and row.preview.startswith(SUBAGENT_PREVIEW)


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


def paint(line: Line, width: int, look: Look, style: Callable[[str], Style], base: Style,
          preview: str, label: str) -> Strip:
    """The strip of one line, exactly ``width`` cells. ``style(name)`` gives a component style
    (``tree-view--NAME``); ``preview``/``label`` are the sanitized texts."""
    row: TreeRow = line[ROW]
    overlay: Style | None = None
    if look.cursor:
        cursor = style("cursor")
        overlay = Style(color=cursor.color, bgcolor=cursor.bgcolor, bold=True)

    def st(name: str) -> Style:
        s = base + style(name)
        return s + overlay if overlay is not None else s

    # the gutter: always drawn whole
    if look.leaf == "here":
        path = Segment("●", st("leaf"))
    elif look.leaf == "below":
        path = Segment("○", st("leaf"))
    elif look.active:
        path = Segment("┃", st("active"))
    else:
        path = Segment(" ", st("plain"))
    glyph = (look.running, "running") if look.running else row_glyph(row)
    mark = Segment(glyph[0], st(glyph[1])) if glyph else Segment(" ", st("plain"))
    head = [path, mark, Segment(" ", st("plain"))]

    body: list[Segment] = []
    prefix = gutter_prefix(line[GUTTER], line[CONNECTOR], levels_for(width))
    if prefix:
        if look.active and line[CONNECTOR] != NONE:
            body += [Segment(prefix[:-2], st("connector")), Segment(prefix[-2:], st("active"))]
        else:
            body.append(Segment(prefix, st("connector")))
    if line[FOLDED]:
        body.append(Segment(f"⊞+{look.hidden} ", st("fold")))
    elif look.hidden:
        body.append(Segment(f"+{look.hidden} ", st("fold")))
    kind = "context" if look.dim else ("error" if getattr(row, "status", None) == "error" else row_kind(row))
    tag = row_tag(row)
    match = st("match") + Style(underline=True) if overlay is not None else st("match")
    if tag:
        body += _highlighted(tag, st(kind), match, look.words)
    if label:
        body += _highlighted(f"[{label}] ", st("label"), match, look.words)
    body += _highlighted(preview or f"({row.type})", st(kind), match, look.words)

    room = width - GUTTER_WIDTH
    strip = Strip(body)
    if strip.cell_length > room:
        cut = strip.crop(0, max(room - 1, 0))
        last = body[-1].style if body else None
        strip = Strip([*cut, Segment("…", last)]) if room > 0 else cut
    pad = base + overlay if overlay is not None else base
    return Strip([*head, *strip]).crop_extend(0, width, pad)


def _highlighted(text: str, normal: Style, match: Style, words: Sequence[str]) -> list[Segment]:
    spans = find_spans(text, words)
    if not spans:
        return [Segment(text, normal)]
    out: list[Segment] = []
    at = 0
    for start, end in spans:
        if start > at:
            out.append(Segment(text[at:start], normal))
        out.append(Segment(text[start:end], match))
        at = end
    if at < len(text):
        out.append(Segment(text[at:], normal))
    return out


class StripCache:
    """Painted lines by everything they show (the line, its look, the width, the styles): a line
    drawn before is not painted again. A resize to a width seen before, the frame after a resize,
    a page back and the old and new cursor rows of a key would otherwise paint every line anew
    (the tree's own part of those frames). Bounded: emptied when full."""

    LIMIT = 4096  # lines (a few screens at a few widths)

    def __init__(self) -> None:
        self._strips: dict[Hashable, Strip] = {}

    def get(self, key: Hashable, make: Callable[[], Strip]) -> Strip:
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) >= self.LIMIT:
                self._strips.clear()
            strip = self._strips[key] = make()
        return strip

    def clear(self) -> None:
        self._strips.clear()


class LineDrawing:
    """The lines of one TreeView: ``line(...)`` is its ``render_line``'s work for one line."""

    def __init__(self) -> None:
        self.strips = StripCache()
        self._leaf_mark: tuple[object, ...] = ()  # (leaf id, layout generation, shown row id)

    def line(self, data: TreeLayout, index: int, width: int, base: Style, *, cursor: int, leaf_id: str | None,
             active: ActivePath, focused: bool, style: Callable[[str], Style], running: Set[int] = frozenset(),
             spinner: str = "") -> Strip:
        """Line ``index`` of ``data``, ``width`` cells over ``base``; ``style(name)`` gives a
        component style (``tree-view--NAME``), which the focus changes for the cursor row."""
        if not 0 <= index < len(data):
            return Strip.blank(width, base)
        line = data.line(index)
        row: TreeRow = line[ROW]
        slot = data.line_slot(index)
        shown_leaf = self._shown_leaf(data, leaf_id)
        leaf = "" if row.id != shown_leaf else ("here" if row.id == leaf_id else "below")
        hidden = data.hidden_under(slot) if line[FOLDED] else data.hidden_alternatives(slot)
        look = Look(leaf, slot in active, index == cursor, hidden, slot in data.context_slots,
                    tuple(query_words(data.query)) if data.match_slots else (), spinner if slot in running else "")
        return self.strips.get((line, look, width, base, focused), lambda: paint(
            line, width, look, style, base, data.preview(row), data.preview_label(row) if row.label else ""))

    def _shown_leaf(self, data: TreeLayout, leaf_id: str | None) -> str | None:
        """The row that carries the leaf mark (the leaf or its nearest shown ancestor), found once
        per change of the lines, not per line drawn."""
        mark = self._leaf_mark
        if not mark or mark[0] != leaf_id or mark[1] != data.generation:
            mark = self._leaf_mark = (leaf_id, data.generation, data.shown_ancestor(leaf_id))
        return mark[2]  # type: ignore[return-value]


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"  # a running branch's marker, a frame per tick while some run goes


class RunMarks:
    """The rows that carry a running branch's marker: each run's tip, or its nearest shown
    ancestor (a filter or a fold hides the tip). Found once per change of the tips or the lines,
    not per line drawn."""

    def __init__(self) -> None:
        self.tips: tuple[str, ...] = ()
        self._found: tuple[int, object, frozenset[int]] = (-1, None, frozenset())  # (generation, layout, slots)

    def set_tips(self, tips: Sequence[str]) -> bool:
        """The tips of the runs going; True when they changed."""
        tips = tuple(dict.fromkeys(tips))
        if tips == self.tips:
            return False
        self.tips = tips
        self._found = (-1, None, frozenset())
        return True

    def slots(self, data: TreeLayout) -> frozenset[int]:
        generation, layout, found = self._found
        if generation != data.generation or layout is not data:
            shown = (data.shown_ancestor_slot(data.index.slot(t)) for t in self.tips)
            found = frozenset(s for s in shown if s is not None)
            self._found = (data.generation, data, found)
        return found

    def lines(self, data: TreeLayout) -> list[int]:
        """The lines of the marked rows, as the layout is now."""
        return [at for s in self.slots(data) if (at := data.line_of(s)) is not None]
