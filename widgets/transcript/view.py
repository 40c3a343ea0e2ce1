"""Transcript: the conversation on the current path, plus the message being streamed.

Data in (from the App):
    ``set_messages(items)``      the whole path: ``TranscriptItem``s or ``(entry_id, message)`` pairs
    ``set_path(ids, tail, loader)``  the same for a long path: the ids of all its messages, the items
                                 of the newest few, and ``loader(ids)`` for the items of any others
                                 (``transcript_items``: only a window of the path is ever loaded)
    ``append_message(item)``     a finished message (mounted before the streaming one)
    ``prepend_messages(items)``  older items the App loaded after ``LoadOlder``
    ``set_streaming(message | None)`` / ``update_streaming(message)``  the assistant message in
                                 flight (an ``AssistantMessage`` snapshot; updates are coalesced
                                 to ~10 Hz and the text goes through ``StreamedMarkdown``)
    ``key_typed()``              a key came from the terminal (a redraw while typing goes in its frame)
    ``set_label(entry_id, label)``  a shown entry's label changed
    ``set_siblings(entry_id, index, count)``  ``‹ index/count ›`` on that message (index is 1-based);
                                 ``set_messages`` forgets the marks of the path before
    ``highlight(entry_id)``      scroll to and mark a message (search jump); mounts it if needed
    ``show_originals(entry_id, items)``  the messages a compaction replaced: a dimmed row each
    ``toggle_tools(expanded=None)`` / ``toggle_thinking(expanded=None)``  Ctrl+O / Ctrl+T
    ``copy_target(n=None)``      what ``/copy`` (the last reply) or ``/copy N`` (N-th from the end) copies

Messages out: ``SiblingRequested(entry_id, delta)``, ``ExpandCompaction(entry_id)``, ``LoadOlder()``,
and for the selected message: ``EditRequested``, ``RetryRequested``, ``ForkRequested``,
``LabelRequested``, ``SubagentRequested`` (a `task` result: Enter or o; each with ``entry_id``), ``CopyRequested(text, what)`` (also from a code
block's "copy").

The selection: one message (or one row of an open compaction card) at a time, an entry id (plus, for an original, the card it is under); it survives a window
move and is marked on whichever view shows it. ``_move`` walks the places in order (each message,
and the rows of each open card); ``_jump`` mounts a window at either end of the branch at once.
The selection is scrolled into view only when it is not in view.

Its keys (``widgets.keymap``, context "transcript", while the transcript has focus):
↑/↓ move it through the messages (and the rows of an expanded compaction card), Home/End jump to
the first/last message of the branch, Esc leaves it; a click selects too. Letter keys act only on a
selected message, so without one they fall through (to the composer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, TypeAlias

from textual import events
from textual.await_complete import AwaitComplete
from textual.binding import BindingType
from textual.geometry import Region
from textual.widget import Widget

from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    UserMessage,
    message_text,
)

from ..keymap import bindings_for
from . import messages
from .copy_text import code_blocks, copy_text, reply_markdown, what_is
from .items import Item, ItemMessage, Loader, PathItems, TranscriptItem, as_item
from .markdown_body import MarkdownBody
from .message_view import CompactionCard, MessageHeader, MessageView
from .originals import OriginalLines
from .streaming_view import StreamingView
from .window import CHUNK, MAX_MOUNTED, WINDOW, TranscriptWindow

__all__ = ["Transcript", "WINDOW", "CHUNK", "MAX_MOUNTED"]

Place = tuple[str, int, int | None]  # a selectable place: (entry id, item index, index among its card's originals)


class Transcript(TranscriptWindow, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for("transcript")]

    # its messages (transcript/messages.py, where the App's first frame can name them)
    SiblingRequested: TypeAlias = messages.SiblingRequested
    ExpandCompaction: TypeAlias = messages.ExpandCompaction
    LoadOlder: TypeAlias = messages.LoadOlder
    EntryRequest: TypeAlias = messages.EntryRequest
    EditRequested: TypeAlias = messages.EditRequested
    RetryRequested: TypeAlias = messages.RetryRequested
    SubagentRequested: TypeAlias = messages.SubagentRequested
    ForkRequested: TypeAlias = messages.ForkRequested
    LabelRequested: TypeAlias = messages.LabelRequested
    CopyRequested: TypeAlias = messages.CopyRequested

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.highlighted: str | None = None  # the search jump's mark
        self.selected: str | None = None
        self._selected_in: str | None = None  # the card's entry id when an original is selected
        self._code_turn: tuple[str, int] | None = None  # the code block the last "copy code" took
        self.sibling_counts: dict[str, tuple[int, int]] = {}
        self.tools_expanded = False
        self.thinking_expanded = False
        self._switch: tuple[int, str] | None = None  # (index, entry id) a sibling switch was asked on
        self._asked_older = False
        self._stream_latest: AssistantMessage | None = None

    def on_mount(self) -> None:
        self.anchor()

    # ------------------------------------------------------------ data in

    def _view(self, item: TranscriptItem) -> MessageView:
        return MessageView(item, tools_expanded=self.tools_expanded, thinking_expanded=self.thinking_expanded)

    def _decorate(self, view: MessageView) -> None:
        if view.entry_id in self.sibling_counts:
            view.set_siblings(*self.sibling_counts[view.entry_id])
        view.set_class(view.entry_id == self.highlighted, "-highlight")
        view.set_class(view.entry_id == self.selected and self._selected_in is None, "-selected")

    def _reached_first(self) -> None:
        if not self._asked_older:
            self._asked_older = True
            self.post_message(self.LoadOlder())

    def set_messages(self, items: Iterable[Item]) -> AwaitComplete:
        # ‹ n/m › belongs to the path handed in: the App sends the new marks right after this call
        # (a fork keeps entry ids, so old marks would show a switcher with nothing to switch to)
        self.sibling_counts = {}
        return self._run(self._set_messages(PathItems(items)))

    def set_path(self, ids: Sequence[str], tail: Iterable[Item], loader: Loader) -> AwaitComplete:
        """A path of any length: its message ids, the items of the newest of them, and the loader
        of the others (the window loads what it mounts)."""
        self.sibling_counts = {}
        return self._run(self._set_messages(PathItems(tail, ids=ids, loader=loader)))

    async def _set_messages(self, items: PathItems) -> None:
        old, self.items = self.items, items
        self._asked_older = False
        switched = self._switched_to(old)
        if switched is not None:  # ‹ › or [ ]: stay at that message, now its sibling, selected
            self._set_selected(self.items.ids[switched])
            start = max(min(switched - WINDOW // 2, len(self.items) - WINDOW), 0)
            await self._mount_window(start, min(start + WINDOW, len(self.items)))
            self.call_after_refresh(self._scroll_to_selected)
            return
        if self._selected_in is not None or self.index_of(self.selected or "") is None:
            self._set_selected(None)  # the new path does not hold it (or its card is closed again)
        await self._mount_window(max(len(self.items) - WINDOW, 0), len(self.items))
        self.scroll_end(animate=False, immediate=True)
        self.anchor()

    def _switched_to(self, old: PathItems) -> int | None:
        """The index of the sibling that replaced the message a switch was asked on, if this path
        is that switch's result (the message is gone; what came before it is the same)."""
        asked, self._switch = self._switch, None
        if asked is None:
            return None
        index, entry_id = asked
        if index >= len(self.items) or self.index_of(entry_id) is not None:
            return None
        if index > 0 and (index > len(old) or old.ids[index - 1] != self.items.ids[index - 1]):
            return None
        return index

    def _ask_switch(self, entry_id: str, delta: int) -> None:
        index = self.index_of(entry_id)
        self._switch = (index, entry_id) if index is not None else None
        self.post_message(self.SiblingRequested(entry_id, delta))

    def append_message(self, item: Item) -> AwaitComplete:
        return self._run(self._append_message(as_item(item)))

    async def _append_message(self, item: TranscriptItem) -> None:
        if item.entry_id in self.items.ids[-8:]:
            return  # already shown (a path read that included it raced its own event)
        at_tail = self.end == len(self.items)
        self.items.append(item)
        if not at_tail:
            return  # the user is reading elsewhere; the item mounts when they scroll down
        self.end += 1
        view = self._view(item)
        await self.mount(view, before=self.streaming)
        self._decorate(view)
        if self.end - self.start > MAX_MOUNTED and self.is_vertical_scroll_end:
            await self._unmount_head(self.end - self.start - WINDOW, keep_place=False)

    def prepend_messages(self, items: Iterable[Item]) -> AwaitComplete:
        return self._run(self._prepend_messages(list(items)))

    async def _prepend_messages(self, items: list[Item]) -> None:
        new = [as_item(i) for i in items]
        self.items.prepend(new)
        self.start += len(new)
        self.end += len(new)
        self._asked_older = False
        await self._load_older()

    def set_siblings(self, entry_id: str, index: int, count: int) -> None:
        self.sibling_counts[entry_id] = (index, count)
        view = self.view_of(entry_id)
        if view is not None:
            view.set_siblings(index, count)

    def set_label(self, entry_id: str, label: str | None) -> None:
        """The label of a shown entry changed."""
        item = self.items.item_of(entry_id)
        if item is not None:
            item.label = label
        for view in self.query(MessageView):
            if view.entry_id == entry_id:
                view.set_label(label)

    def highlight(self, entry_id: str) -> AwaitComplete:
        return self._run(self._highlight(entry_id))

    async def _highlight(self, entry_id: str) -> None:
        index = self.index_of(entry_id)
        if index is None:
            return
        self.highlighted = entry_id
        if not self.start <= index < self.end:
            await self._mount_window(max(index - 10, 0), min(index + WINDOW, len(self.items)))
        for view in self._views():
            self._decorate(view)
            if view.entry_id == entry_id:
                self.call_after_refresh(self.scroll_to_widget, view, animate=False, top=True)

    def show_originals(self, entry_id: str, items: Iterable[Item]) -> AwaitComplete:
        return self._run(self._show_originals(entry_id, list(items)))

    async def _show_originals(self, entry_id: str, items: list[Item]) -> None:
        originals = []
        for raw in items:
            item = as_item(raw)
            item.outside_context = True
            originals.append(item)
        card = self._cards().get(entry_id)
        if card is not None:
            await card.show_originals(originals, self._view)
            self.call_after_refresh(self._card_to_top, entry_id)

    def _card_to_top(self, entry_id: str) -> None:
        """An opened card starts at the top of the view (not pushed up by its own rows)."""
        view = self.view_of(entry_id)
        if view is not None and self.max_scroll_y > 0:
            self.scroll_to_widget(view, animate=False, immediate=True, top=True)

    def toggle_tools(self, expanded: bool | None = None) -> None:
        self.tools_expanded = (not self.tools_expanded) if expanded is None else expanded
        for view in self.query(MessageView):
            view.set_tools_expanded(self.tools_expanded)

    def toggle_thinking(self, expanded: bool | None = None) -> None:
        self.thinking_expanded = (not self.thinking_expanded) if expanded is None else expanded
        for view in self.query(MessageView):
            view.set_thinking_expanded(self.thinking_expanded)
        if self.streaming:
            self.streaming.show_thinking = self.thinking_expanded

    def copy_target(self, n: int | None = None) -> tuple[str, str] | None:
        """``(text, what)`` for ``/copy`` (the last reply with text) or ``/copy N`` (the N-th message
        from the end, 1 = the last); None when there is no such message."""
        if n is None:
            item = next((i for i in reversed(list(self.items.loaded())) if isinstance(i.message, AssistantMessage)
                         and copy_text(i.message).strip()), None)
        else:
            item = self.items.get(len(self.items) - n) if 0 < n <= len(self.items) else None
        return (copy_text(item.message), what_is(item.message)) if item is not None else None

    # ------------------------------------------------------------ streaming

    def set_streaming(self, message: AssistantMessage | None) -> AwaitComplete:
        self._stream_latest = message
        return self._run(self._set_streaming(message))

    def set_pending(self) -> AwaitComplete:
        """A request went out: its reply's place shows at once, with a spinner and the time waited."""
        return self._run(self._set_pending())

    async def _set_pending(self) -> None:
        if self.streaming is None:
            self.streaming = StreamingView(show_thinking=self.thinking_expanded)
            await self.mount(self.streaming)

    async def _set_streaming(self, message: AssistantMessage | None) -> None:
        if message is not None and self.streaming is not None and self.streaming.latest is None:
            self.streaming.update_message(message)  # the pending view becomes the reply's
            return
        if self.streaming is not None:
            old, self.streaming = self.streaming, None
            await old.finish()
            await old.remove()
        if message is not None:
            self.streaming = StreamingView(show_thinking=self.thinking_expanded)
            await self.mount(self.streaming)
            self.streaming.update_message(self._stream_latest or message)

    def update_streaming(self, message: AssistantMessage) -> None:
        self._stream_latest = message
        if self.streaming is not None:
            self.streaming.update_message(message)

    def key_typed(self) -> None:
        """A key came from the terminal: the reply being streamed draws what is due in its frame."""
        if self.streaming is not None:
            self.streaming.key_typed()

    # ------------------------------------------------------------ the selection

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

    # ------------------------------------------------------------ keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("select", "select_first", "select_last"):
            return bool(self.items)
        if action in ("unselect", "fork", "label"):
            return self.selected is not None
        if action in ("copy", "copy_code", "edit", "retry", "open", "open_subagent"):
            item = self.selected_item()
            if item is None:
                return False
            msg = item.message
            if action == "copy":
                return bool(copy_text(msg).strip())
            if action == "copy_code":
                return bool(code_blocks(_code_source(msg)))
            if action == "edit":
                return isinstance(msg, UserMessage)
            if action == "retry":
                return isinstance(msg, AssistantMessage)
            if action == "open_subagent" or item.subagent is not None:  # (Enter on it opens it too)
                return item.subagent is not None and self._selected_in is None
            if self._selected_in is not None or isinstance(msg, (CompactionEntry, CompactionSummaryMessage)):
                return True
            view = self.view_of(item.entry_id)
            return view is not None and view.has_fold  # an edit's diff, a skill's text
        return True

    def action_select(self, delta: int) -> None:
        self._run(self._move(delta))

    def action_select_first(self) -> None:
        self._run(self._jump(last=False))

    def action_select_last(self) -> None:
        self._run(self._jump(last=True))

    def action_unselect(self) -> None:
        self._set_selected(None)

    def action_copy(self) -> None:
        item = self.selected_item()
        if item is not None:
            self.post_message(self.CopyRequested(copy_text(item.message), what_is(item.message)))

    def action_copy_code(self) -> None:
        """The selected message's code block; pressed again, the next one (they take turns)."""
        item = self.selected_item()
        blocks = code_blocks(_code_source(item.message)) if item is not None else ()
        if item is None or not blocks:
            return
        turn = self._code_turn[1] + 1 if self._code_turn and self._code_turn[0] == item.entry_id else 0
        turn %= len(blocks)
        self._code_turn = (item.entry_id, turn)
        self.post_message(self.CopyRequested(blocks[turn].code, _code_what(blocks[turn].language, turn, len(blocks))))

    def _request(self, kind: type[messages.EntryRequest]) -> None:
        if self.selected is not None:
            self.post_message(kind(self.selected))

    def action_edit(self) -> None:
        self._request(self.EditRequested)

    def action_retry(self) -> None:
        self._request(self.RetryRequested)

    def action_fork(self) -> None:
        self._request(self.ForkRequested)

    def action_label(self) -> None:
        self._request(self.LabelRequested)

    def action_open_subagent(self) -> None:
        self._request(self.SubagentRequested)

    async def action_open(self) -> None:
        """Enter: open or close the selected compaction card, the selected original in full, the
        selected edit's diff, or the text of the skill or template a selected message used; on a
        sub-agent's result, its session."""
        item = self.selected_item()
        if item is not None and item.subagent is not None and self._selected_in is None:
            self.action_open_subagent()
            return
        if self._selected_in is not None:
            card = self._cards().get(self._selected_in)
            if card is not None and card.selected_original is not None:
                await card.open_original(card.selected_original, self._view)
        elif self.selected is not None:
            card = self._cards().get(self.selected)
            if card is not None:
                card.toggle()
            else:  # an edit's diff, a skill's text
                view = self.view_of(self.selected)
                if view is not None:
                    view.toggle_folds()
        self.call_after_refresh(self._scroll_to_selected)  # what opened may have pushed it away

    def action_sibling(self, delta: int) -> None:
        """``[``/``]``: on the selected (or highlighted) message, else the last one that has siblings."""
        target = next((t for t in (self.selected, self.highlighted) if t in self.sibling_counts), None)
        if target is None:
            shown = [v.entry_id for v in self._views() if self.sibling_counts.get(v.entry_id, (0, 0))[1] > 1]
            target = shown[-1] if shown else None
        if target is not None:
            self._ask_switch(target, delta)

    def action_toggle_tools(self) -> None:
        self.toggle_tools()

    def action_toggle_thinking(self) -> None:
        self.toggle_thinking()

    # ------------------------------------------------------------ clicks and child messages

    def on_click(self, event: events.Click) -> None:
        """A click on a message selects it (without scrolling: it is where the pointer is)."""
        node: Widget | None = event.widget
        while node is not None and node is not self and not isinstance(node, MessageView):
            node = node.parent if isinstance(node.parent, Widget) else None
        if not isinstance(node, MessageView):
            return
        card = next((a for a in node.ancestors if isinstance(a, CompactionCard)), None)
        self._set_selected(node.entry_id, card.item.entry_id if card is not None else None)

    async def on_original_lines_clicked(self, event: OriginalLines.Clicked) -> None:
        event.stop()
        card = next((a for a in event.lines.ancestors if isinstance(a, CompactionCard)), None)
        if card is None or not 0 <= event.index < len(card.originals):
            return
        self._set_selected(card.originals[event.index].entry_id, card.item.entry_id)
        await card.open_original(event.index, self._view)
        self.call_after_refresh(self._scroll_to_selected)

    def on_markdown_body_copy_code(self, event: MarkdownBody.CopyCode) -> None:
        event.stop()
        self.post_message(self.CopyRequested(event.code, _code_what(event.language, event.index, event.total)))

    def on_message_header_clicked(self, event: MessageHeader.Clicked) -> None:
        event.stop()
        view = next((a for a in event.header.ancestors if isinstance(a, MessageView)), None)
        if view is not None:
            self._ask_switch(view.entry_id, event.delta)

    def on_compaction_card_expanded(self, event: CompactionCard.Expanded) -> None:
        event.stop()
        self.call_after_refresh(self._card_to_top, event.entry_id)
        self.post_message(self.ExpandCompaction(event.entry_id))


def _code_source(message: ItemMessage) -> str:
    """The Markdown whose code blocks a "copy code" picks from (a reply's text, or a prompt's)."""
    return reply_markdown(message) if isinstance(message, AssistantMessage) else (
        message_text(message) if isinstance(message, UserMessage) else "")


def _code_what(language: str, index: int, total: int) -> str:
    kind = f"{language} code block" if language else "code block"
    return f"the {kind}" if total == 1 else f"{kind} {index + 1} of {total}"
