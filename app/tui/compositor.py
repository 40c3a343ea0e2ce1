"""The App screen's compositor: Textual's, drawing only what is not covered.

Textual builds a frame front to back: every visible widget renders all its lines in the update's
crop, each line is cut into one strip per column span ("chop") and the front-most strip of a span
wins. The containers behind (the screen, the main row, the chat column, the transcript, each
message's frame) are rendered and cut too, though what is in front covers nearly all of them: at
160x45 about half a full frame's strips, made and thrown away (issue 26: a resize's frame is a full
one). Here a widget renders only the lines on which some span it reaches is still open, and only
those lines are cut; what a frame shows is the same (the front-most strip of each span).

Overrides ``Compositor._render_chops`` (with ``_get_renders``'s crop rules) under the pin
``textual>=8.2.8,<8.3``; tests/tui/test_resize.py and the snapshot tests draw through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip


class CoveredCompositor(Compositor):
    def _render_chops(self, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            if crop and not crop.overlaps(clip):
                continue
            shown = intersection(region, clip)  # (Textual's render crop: the part inside the clip)
            if not (shown.width and shown.height):
                continue
            first_cut, last_cut = shown.column_span
            spans: dict[int, list[int]] = {}  # line -> the cuts it reaches there, while one is open
            for y in shown.line_range:
                if not is_rendered_line(y):
                    continue
                line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                line = chops[y]
                if any(line.get(cut, False) is None for cut in line_cuts[:-1]):  # (the last: its right edge)
                    spans[y] = line_cuts
            if not spans:
                continue  # covered wherever this update draws: not rendered at all
            top, bottom = min(spans), max(spans) + 1
            strips = widget.render_lines(Region(shown.x - region.x, top - region.y, shown.width, bottom - top))
            x = shown.x
            for y, strip in zip(range(top, bottom), strips):
                reached = spans.get(y)
                if reached is None:
                    continue
                line = chops[y]
                for cut, piece in zip(reached, strip.divide([cut - x for cut in reached[1:]])):
                    if line.get(cut) is None:
                        line[cut] = piece
        return chops  # type: ignore[return-value]  # (every span filled: the screen covers all)
