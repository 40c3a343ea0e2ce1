"""TreeView's lines as drawn: what ``paint`` is told about each line (its look), and a cache of the
painted lines by everything they show, so a line drawn before is not painted again."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from rich.style import Style
from textual.strip import Strip

from treechat.storage.base import TreeRow

from .layout import TreeLayout
from .lines import ActivePath
from .paint import Look, paint
from .query import query_words
from .rows import FOLDED, ROW


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
             active: ActivePath, focused: bool, style: Callable[[str], Style]) -> Strip:
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
                    tuple(query_words(data.query)) if data.match_slots else ())
        return self.strips.get((line, look, width, base, focused), lambda: paint(
            line, width, look, style, base, data.preview(row), data.preview_label(row) if row.label else ""))

    def _shown_leaf(self, data: TreeLayout, leaf_id: str | None) -> str | None:
        """The row that carries the leaf mark (the leaf or its nearest shown ancestor), found once
        per change of the lines, not per line drawn."""
        mark = self._leaf_mark
        if not mark or mark[0] != leaf_id or mark[1] != data.generation:
            mark = self._leaf_mark = (leaf_id, data.generation, data.shown_ancestor(leaf_id))
        return mark[2]  # type: ignore[return-value]
