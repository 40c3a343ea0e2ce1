"""The transcript's selection: one message (or one row of an open compaction card) at a time.

The selection is an entry id (plus, for an original, the card it is under); it survives a window
move and is marked on whichever view shows it. ``_move`` walks the places in order (each message,
and the rows of each open card); ``_jump`` mounts a window at either end of the branch at once.
The selection is scrolled into view only when it is not in view.
"""

from __future__ import annotations

from textual.geometry import Region

from .message_view import CompactionCard, TranscriptItem
from .originals import OriginalLines
from .window import TranscriptWindow

Place = tuple[str, int, int | None]  # (entry id, item index, index among its card's originals)


class SelectableTranscript(TranscriptWindow):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.highlighted: str | None = None  # the search jump's mark
        self.selected: str | None = None
        self._selected_in: str | None = None  # the card's entry id when an original is selected
        self._code_turn: tuple[str, int] | None = None  # the code block the last "copy code" took

    def _cards(self) -> dict[str, CompactionCard]:
        """The compaction cards of the mounted top-level messages, by entry id."""
        return {v.entry_id: card for v in self._views() for card in v.query_children(CompactionCard)}

    def _order(self) -> list[Place]:
        """Every selectable place: each message, and the rows of each expanded card's originals."""
        cards = {eid: c for eid, c in self._cards().items() if c.expanded and c.originals}
        out: list[Place] = []
        for index, entry_id in enumerate(self.items.ids):
            out.append((entry_id, index, None))
            card = cards.get(entry_id) if cards else None
            if card is not None:
                out.extend((o.entry_id, index, k) for k, o in enumerate(card.originals))
        return out

    def _position(self, order: list[Place]) -> int | None:
        if self.selected is None:
            return None
        card_index = self.index_of(self._selected_in) if self._selected_in is not None else None
        for pos, (entry_id, index, original) in enumerate(order):
            if entry_id == self.selected and (original is None) == (card_index is None):
                if card_index is None or index == card_index:
                    return pos
        return None

    def selected_item(self) -> TranscriptItem | None:
        if self.selected is None:
            return None
        if self._selected_in is not None:
            card = self._cards().get(self._selected_in)
            return next((o for o in card.originals if o.entry_id == self.selected), None) if card else None
        index = self.index_of(self.selected)
        return self.items.get(index) if index is not None else None

    def _set_selected(self, entry_id: str | None, card_id: str | None = None) -> None:
        if (entry_id, card_id) == (self.selected, self._selected_in):
            return
        self.selected, self._selected_in = entry_id, card_id
        self._code_turn = None
        if entry_id is not None and self.highlighted is not None:
            self.highlighted = None  # one mark at a time: the search jump's gives way
        for view in self._views():
            self._decorate(view)
        for eid, card in self._cards().items():
            original = None
            if eid == card_id:
                original = next((k for k, o in enumerate(card.originals) if o.entry_id == entry_id), None)
            card.select_original(original)
        if self.is_mounted:
            self.refresh_bindings()

    async def _select(self, place: Place, *, scroll: bool = True) -> None:
        entry_id, index, original = place
        await self._ensure_mounted(index)
        card_id = self.items.ids[index] if original is not None else None
        self._set_selected(entry_id, card_id)
        if scroll:
            self.call_after_refresh(self._scroll_to_selected)

    def _scroll_to_selected(self) -> None:
        """Scroll the selection into view, only when it is not in view: scrolling releases the
        anchor, and an anchor released while the content is shorter than the view (Textual then
        holds it bottom-aligned at a negative offset) would keep that offset and cut off what grows."""
        shown = self.scrollable_content_region
        if self._selected_in is not None:
            card = self._cards().get(self._selected_in)
            lines = card.select_original(card.selected_original) if card is not None else None
            view = self.view_of(self._selected_in)
            if card is not None and lines is not None and view is not None and card.selected_original is not None:
                row = lines.region.y + card.selected_original - lines.first
                if not shown.y <= row < shown.bottom:
                    # the row's place in the scrolled content: its view's place plus the row's offset
                    # in the view (two screen positions from the same layout: no stale scroll in it)
                    top = view.virtual_region.y + row - view.region.y
                    self.scroll_to_region(Region(0, top, 1, 1), animate=False, immediate=True)
            return
        view = self.view_of(self.selected or "")
        if view is None:
            return
        tall = view.outer_size.height >= shown.height
        if tall and shown.y <= view.region.y < shown.bottom or not tall and shown.contains_region(view.region):
            return
        self.scroll_to_widget(view, animate=False, immediate=True, top=tall)

    def _edge_place(self, order: list[Place], delta: int) -> Place | None:
        """Nothing selected yet: ↑ takes the lowest message on screen, ↓ the highest (a row of an
        open card's originals when that is what the screen's bottom shows)."""
        top, height = round(self.scroll_y), self.scrollable_content_region.height
        seen = [v for v in self._views() if v.virtual_region.y < top + height and v.virtual_region.bottom > top]
        if not seen:
            return order[-1] if delta < 0 else order[0]
        view = seen[-1] if delta < 0 else seen[0]
        place = next((p for p in order if p[0] == view.entry_id and p[2] is None), order[-1])
        card = self._cards().get(view.entry_id)
        if delta < 0 and card is not None and card.expanded:
            row = self._lowest_row(card)
            if row is not None:
                return next((p for p in order if p[1] == place[1] and p[2] == row), place)
        return place

    def _lowest_row(self, card: CompactionCard) -> int | None:
        """The original whose row is lowest on screen, if any row is on screen."""
        shown = self.scrollable_content_region
        for lines in reversed(list(card.query(OriginalLines))):
            region = lines.region.intersection(shown)
            if region.height:
                return lines.first + region.bottom - 1 - lines.region.y
        return None

    async def _move(self, delta: int) -> None:
        order = self._order()
        if not order:
            return
        pos = self._position(order)
        place = self._edge_place(order, delta) if pos is None else order[max(0, min(len(order) - 1, pos + delta))]
        if place is not None:
            await self._select(place)

    async def _jump(self, last: bool) -> None:
        if not self.items:
            return
        with self.app.batch_update():  # one frame: the new window already at its end
            await (self._mount_last() if last else self._mount_first())
            index = len(self.items) - 1 if last else 0
            await self._select((self.items.ids[index], index, None), scroll=False)
            if last:
                self.anchor()  # at the end of the branch: follow it again (also once laid out)
            else:
                self.scroll_home(animate=False, immediate=True)
