"""How one tree line is drawn (``TreeView.render_line`` hands in what it knows about the line).

A line is a fixed three-cell gutter, then the connector drawing, then the text:

    ┃⚑ ├─asst: [A-done] Approach A done, the tests pass an…
    ││└ glyph: ✗ error, ⊘ aborted, ≡ compaction, ↩ branch summary, ⚑ label
    │└ path: ● the leaf, ○ the leaf is hidden below this row, ┃ on the active path

The gutter is never cut, so the leaf and the active path show at any width; the text is cut to the
width with an ellipsis. The cursor row gets its background and one contrasting text colour over
every cell, whatever the row's colours (the style says which, focused or not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from treechat.storage.base import TreeRow

from .query import find_spans
from .rows import CONNECTOR, FOLDED, GUTTER, NONE, ROW, Line, gutter_prefix, row_glyph, row_kind

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


def levels_for(width: int) -> int:
    """How many connector levels fit while the text keeps at least MIN_TEXT cells."""
    return max(1, min(MAX_LEVELS, (width - GUTTER_WIDTH - MIN_TEXT) // 2))


def row_tag(row: TreeRow) -> str:
    """What the text starts with: the role of a message, the kind of a summary."""
    return ROLE_TAG.get(row_kind(row), "") if row.type == "message" else TYPE_TAG.get(row.type, "")


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
    glyph = row_glyph(row)
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

