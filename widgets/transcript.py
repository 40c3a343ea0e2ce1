"""Transcript: the conversation on the current path, plus the message being streamed.

Data in (from the App):
    ``set_messages(items)``      the whole path: ``TranscriptItem``s or ``(entry_id, message)`` pairs
    ``append_message(item)``     a finished message (mounted before the streaming one)
    ``prepend_messages(items)``  older items the App loaded after ``LoadOlder``
    ``set_streaming(message | None)`` / ``update_streaming(message)``  the assistant message in
                                 flight (an ``AssistantMessage`` snapshot; updates are coalesced
                                 to ~20 Hz and the text goes through ``MarkdownStream``)
    ``set_label(entry_id, label)``  a shown entry's label changed
    ``set_siblings(entry_id, index, count)``  ``‹ index/count ›`` on that message (index is 1-based)
    ``highlight(entry_id)``      scroll to and mark a message (search jump); mounts it if needed
    ``show_originals(entry_id, items)``  the messages a compaction replaced, shown dimmed
    ``toggle_tools(expanded=None)`` / ``toggle_thinking(expanded=None)``  Ctrl+O / Ctrl+T

Messages out: ``SiblingRequested(entry_id, delta)``, ``ExpandCompaction(entry_id)``,
``LoadOlder()`` (the user reached the top of everything handed in).

Only a window of items is mounted (the tail, ``WINDOW`` items); scrolling to either edge mounts
the next ``CHUNK``. A 2,000-message branch therefore costs ~``WINDOW`` widgets, not 2,000.
"""

from __future__ import annotations

import asyncio
from typing import Any, Coroutine, Iterable

from textual.await_complete import AwaitComplete
from textual.containers import VerticalScroll
from textual.message import Message

from .keymap import bindings_for
from .message_view import CompactionCard, MessageHeader, MessageView, TranscriptItem, as_item
from .streaming_view import StreamingView

WINDOW = 40
CHUNK = 30
MAX_MOUNTED = 160  # beyond this, the far end of the window is unmounted again


class Transcript(VerticalScroll, can_focus=True):
    BINDINGS = bindings_for("transcript")

    class SiblingRequested(Message):
        """Switch to the previous (-1) or next (+1) sibling of ``entry_id``."""

        def __init__(self, entry_id: str, delta: int) -> None:
            self.entry_id, self.delta = entry_id, delta
            super().__init__()

    class ExpandCompaction(Message):
        """The user opened a compaction card: hand in what it replaced via ``show_originals``."""

        def __init__(self, entry_id: str) -> None:
            self.entry_id = entry_id
            super().__init__()

    class LoadOlder(Message):
        """Scrolled to the top of the first item: the App may ``prepend_messages`` older ones."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.items: list[TranscriptItem] = []
        self.start = self.end = 0  # the mounted window is items[start:end]
        self.sibling_counts: dict[str, tuple[int, int]] = {}
        self.tools_expanded = False
        self.thinking_expanded = False
        self.highlighted: str | None = None
        self.streaming: StreamingView | None = None
        self._loading = False
        self._asked_older = False
        self._lock = asyncio.Lock()
        self._stream_latest: Any = None

    def on_mount(self) -> None:
        self.anchor()

    # ------------------------------------------------------------ data in

    def _view(self, item: TranscriptItem) -> MessageView:
        view = MessageView(item, tools_expanded=self.tools_expanded, thinking_expanded=self.thinking_expanded)
        return view

    def _views(self) -> list[MessageView]:
        return [child for child in self.children if isinstance(child, MessageView)]

    def _run(self, work: Coroutine) -> AwaitComplete:
        """Start ``work`` now, one change at a time; await the result or don't (both work)."""

        async def serialized() -> Any:
            async with self._lock:
                return await work

        return AwaitComplete(serialized())

    def set_messages(self, items: Iterable[Any]) -> AwaitComplete:
        # ‹ n/m › belongs to the path handed in: the App sends the new marks right after this call
        # (a fork keeps entry ids, so old marks would show a switcher with nothing to switch to)
        self.sibling_counts = {}
        return self._run(self._set_messages(list(items)))

    async def _set_messages(self, items: list[Any]) -> None:
        self.items = [as_item(i) for i in items]
        self._asked_older = False
        await self._mount_window(max(len(self.items) - WINDOW, 0), len(self.items))
        self.scroll_end(animate=False, immediate=True)
        self.anchor()

    async def _mount_window(self, start: int, end: int) -> None:
        with self.app.batch_update():
            await self.remove_children(MessageView)
            self.start, self.end = start, end
            views = [self._view(item) for item in self.items[start:end]]
            if views:
                await self.mount_all(views, before=self.streaming)
            for view in views:
                self._apply_siblings(view)

    def append_message(self, item: Any) -> AwaitComplete:
        return self._run(self._append_message(as_item(item)))

    async def _append_message(self, item: TranscriptItem) -> None:
        if any(i.entry_id == item.entry_id for i in self.items[-8:]):
            return  # already shown (a path read that included it raced its own event)
        at_tail = self.end == len(self.items)
        self.items.append(item)
        if not at_tail:
            return  # the user is reading elsewhere; the item mounts when they scroll down
        self.end += 1
        view = self._view(item)
        await self.mount(view, before=self.streaming)
        self._apply_siblings(view)
        if self.end - self.start > MAX_MOUNTED and self.is_vertical_scroll_end:
            await self._unmount_head(self.end - self.start - WINDOW)

    def prepend_messages(self, items: Iterable[Any]) -> AwaitComplete:
        return self._run(self._prepend_messages(list(items)))

    async def _prepend_messages(self, items: list[Any]) -> None:
        new = [as_item(i) for i in items]
        self.items[:0] = new
        self.start += len(new)
        self.end += len(new)
        self._asked_older = False
        await self._load_older()

    def set_siblings(self, entry_id: str, index: int, count: int) -> None:
        self.sibling_counts[entry_id] = (index, count)
        for view in self._views():
            if view.entry_id == entry_id:
                view.set_siblings(index, count)

    def set_label(self, entry_id: str, label: str | None) -> None:
        """The label of a shown entry changed."""
        for item in self.items:
            if item.entry_id == entry_id:
                item.label = label
        for view in self._views():
            if view.entry_id == entry_id:
                view.set_label(label)

    def _apply_siblings(self, view: MessageView) -> None:
        if view.entry_id in self.sibling_counts:
            view.set_siblings(*self.sibling_counts[view.entry_id])

    def highlight(self, entry_id: str) -> AwaitComplete:
        return self._run(self._highlight(entry_id))

    async def _highlight(self, entry_id: str) -> None:
        index = next((i for i, item in enumerate(self.items) if item.entry_id == entry_id), None)
        if index is None:
            return
        if not self.start <= index < self.end:
            await self._mount_window(max(index - 10, 0), min(index + WINDOW, len(self.items)))
        self.release_anchor()
        for view in self._views():
            view.set_class(view.entry_id == entry_id, "-highlight")
            if view.entry_id == entry_id:
                self.highlighted = entry_id
                self.call_after_refresh(self.scroll_to_widget, view, animate=False, top=True)

    def show_originals(self, entry_id: str, items: Iterable[Any]) -> AwaitComplete:
        return self._run(self._show_originals(entry_id, list(items)))

    async def _show_originals(self, entry_id: str, items: list[Any]) -> None:
        views = []
        for raw in items:
            item = as_item(raw)
            item.outside_context = True
            views.append(self._view(item))
        for card in self.query(CompactionCard):
            if card.item.entry_id == entry_id:
                await card.show_originals(views)

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

    # ------------------------------------------------------------ streaming

    def set_streaming(self, message: Any | None) -> AwaitComplete:
        self._stream_latest = message
        return self._run(self._set_streaming(message))

    async def _set_streaming(self, message: Any | None) -> None:
        if self.streaming is not None:
            old, self.streaming = self.streaming, None
            await old.finish()
            await old.remove()
        if message is not None:
            self.streaming = StreamingView(show_thinking=self.thinking_expanded)
            await self.mount(self.streaming)
            self.streaming.update_message(self._stream_latest or message)

    def update_streaming(self, message: Any) -> None:
        self._stream_latest = message
        if self.streaming is not None:
            self.streaming.update_message(message)

    # ------------------------------------------------------------ windowing

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self._loading:
            return
        if new <= 1 and old > new:
            self._reached_top()
        elif new >= self.max_scroll_y - 1 and new > old and self.end < len(self.items):
            self._run(self._load_newer())

    def on_mouse_scroll_up(self) -> None:
        # content shorter than the view never changes scroll_y: the wheel is the only signal
        if self.scroll_y <= 1 and not self._loading:
            self._reached_top()

    def _reached_top(self) -> None:
        if self.start > 0:
            self._run(self._load_older())
        elif not self._asked_older and self.items:
            self._asked_older = True
            self.post_message(self.LoadOlder())

    async def _load_older(self) -> None:
        if self._loading or self.start == 0:
            return
        self._loading = True
        try:
            first = next(iter(self._views()), None)
            new_start = max(self.start - CHUNK, 0)
            views = [self._view(item) for item in self.items[new_start : self.start]]
            self.start = new_start
            with self.app.batch_update():
                await self.mount_all(views, before=first) if first else await self.mount_all(views)
                for view in views:
                    self._apply_siblings(view)
            if first is not None:
                # keep what the user was reading in place: the new rows grow above it
                self.call_after_refresh(self.scroll_to_widget, first, animate=False, top=True)
            if self.end - self.start > MAX_MOUNTED:
                await self._unmount_tail(self.end - self.start - MAX_MOUNTED)
        finally:
            self._loading = False

    async def _load_newer(self) -> None:
        if self._loading or self.end >= len(self.items):
            return
        self._loading = True
        try:
            new_end = min(self.end + CHUNK, len(self.items))
            views = [self._view(item) for item in self.items[self.end : new_end]]
            self.end = new_end
            await self.mount_all(views, before=self.streaming)
            for view in views:
                self._apply_siblings(view)
        finally:
            self._loading = False

    async def _unmount_head(self, count: int) -> None:
        views = self._views()[:count]
        self.start += len(views)
        await self.remove_children(views)

    async def _unmount_tail(self, count: int) -> None:
        views = self._views()[-count:]
        self.end -= len(views)
        await self.remove_children(views)

    # ------------------------------------------------------------ keys and child messages

    def action_sibling(self, delta: int) -> None:
        """``[``/``]``: on the highlighted message, else the last one that has siblings."""
        target = self.highlighted if self.highlighted in self.sibling_counts else None
        if target is None:
            shown = [v.entry_id for v in self._views() if self.sibling_counts.get(v.entry_id, (0, 0))[1] > 1]
            target = shown[-1] if shown else None
        if target is not None:
            self.post_message(self.SiblingRequested(target, delta))

    def action_toggle_tools(self) -> None:
        self.toggle_tools()

    def action_toggle_thinking(self) -> None:
        self.toggle_thinking()

    def on_message_header_clicked(self, event: MessageHeader.Clicked) -> None:
        event.stop()
        view = next((a for a in event.header.ancestors if isinstance(a, MessageView)), None)
        if view is not None:
            self.post_message(self.SiblingRequested(view.entry_id, event.delta))

    def on_compaction_card_expanded(self, event: CompactionCard.Expanded) -> None:
        event.stop()
        self.post_message(self.ExpandCompaction(event.entry_id))
