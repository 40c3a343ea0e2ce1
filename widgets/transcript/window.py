"""The transcript's window: which of the items handed in are mounted as widgets.

The items themselves are a ``PathItems``: every message of the branch by id, the items of a window
of them loaded from the App's loader (a long branch is never read whole); every mount below loads
what it mounts first.

Every mounted view costs time when it mounts (~5 ms) and again on each resize or width change (the
tree panel opening), so only a window is mounted, and it is built in steps a frame apart: first
``WINDOW`` items around what is shown (the tail, or the target of Home/End/a jump: mounted at once,
not walked to chunk by chunk), then one ``CHUNK`` per step on whichever side has less than a
screen of content beyond the view ("filling"), so a key is never stuck behind a long mount. Beyond
``MAX_MOUNTED`` the far end is unmounted again, keeping what is on screen where it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from textual.await_complete import AwaitComplete
from textual.containers import VerticalScroll

from ..textual_internals import anchor_holds
from .items import PathItems, TranscriptItem
from .message_view import MessageView
from .streaming_view import StreamingView

WINDOW = 16  # mounted at once around what is shown
CHUNK = 12  # mounted per step at an edge
MAX_MOUNTED = 72  # beyond this, the far end of the window is unmounted again


class TranscriptWindow(VerticalScroll):
    """Mounts ``items[start:end]`` as ``MessageView``s (plus the streaming view at the end)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.items = PathItems()
        self.start = self.end = 0  # the mounted window is items[start:end]
        self.streaming: StreamingView | None = None
        self._loading = False
        self._fill_pending = False
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------ what the owner decides

    def _view(self, item: TranscriptItem) -> MessageView:
        return MessageView(item)

    def _decorate(self, view: MessageView) -> None:
        """A view was just mounted: give it its marks (siblings, selection)."""

    def _reached_first(self) -> None:
        """Scrolled to the top of the first item handed in."""

    def release_anchor(self) -> None:
        """Stop following the end, unless everything fits: an anchored transcript shorter than
        the view sits at the bottom (Textual holds it at a negative scroll offset); released
        there, it would keep that offset and cut off whatever grows below."""
        if self.scroll_y >= 0:
            super().release_anchor()

    @property
    def following(self) -> bool:
        """Anchored and not released by a scroll: Textual keeps the end in view as content grows
        (Widget.is_anchored says only that an anchor was set, not whether it still holds)."""
        return anchor_holds(self)

    def follow_end(self) -> AwaitComplete:
        """Show the end of the branch and follow it again (the user sent something: they want to
        see it and its answer, wherever they had scrolled to)."""
        return self._run(self._follow_end())

    async def _follow_end(self) -> None:
        await self._mount_last()
        self.anchor()  # its scroll_end re-engages an anchor a scroll released

    # ------------------------------------------------------------ lookups

    def _views(self) -> list[MessageView]:
        return [child for child in self.children if isinstance(child, MessageView)]

    def index_of(self, entry_id: str) -> int | None:
        return self.items.index_of(entry_id)

    def view_of(self, entry_id: str) -> MessageView | None:
        return next((v for v in self._views() if v.entry_id == entry_id), None)

    def _run(self, work: Awaitable[None]) -> AwaitComplete:
        """Start ``work`` now, one change at a time; await it or don't (both work)."""

        async def serialized() -> None:
            async with self._lock:
                await work

        return AwaitComplete(serialized())

    # ------------------------------------------------------------ mounting

    async def _mount_window(self, start: int, end: int) -> None:
        end -= await self.items.load(start, end)
        end = min(end, len(self.items))
        start = min(start, end)
        if end < len(self.items):
            self.anchor(False)  # the end of the window is not the end of the branch: nothing to follow
        with self.app.batch_update():
            await self.remove_children(MessageView)
            self.start, self.end = start, end
            self.items.let_go(start, end)
            views = [self._view(item) for item in self.items[start:end]]
            if views:
                await self.mount_all(views, before=self.streaming)
            for view in views:
                self._decorate(view)
        self._fill_later()

    async def _ensure_mounted(self, index: int) -> None:
        """Mount item ``index``: the next chunk when it is just past an edge, else a window around it."""
        if self.start <= index < self.end:
            return
        if self.start - CHUNK <= index < self.start:
            await self._load_older()
        elif self.end <= index < self.end + CHUNK:
            await self._load_newer()
        else:
            start = max(min(index - WINDOW // 2, len(self.items) - WINDOW), 0)
            await self._mount_window(start, min(start + WINDOW, len(self.items)))

    async def _mount_first(self) -> None:
        if self.start > 0:
            await self._mount_window(0, min(WINDOW, len(self.items)))

    async def _mount_last(self) -> None:
        if self.end < len(self.items):
            await self._mount_window(max(len(self.items) - WINDOW, 0), len(self.items))

    # ------------------------------------------------------------ filling, a step per frame

    def _fill_later(self) -> None:
        if not self._fill_pending and self.is_mounted:
            self._fill_pending = True
            self.call_after_refresh(self._fill)

    def _fill(self) -> None:
        """After a frame: one more chunk where less than a screen of content lies beyond the view
        (not once the window is full: then only reaching an edge moves it, trimming the far end)."""
        self._fill_pending = False
        if self._loading or self.end - self.start + CHUNK > MAX_MOUNTED:
            return
        view = self.scrollable_content_region.height
        if view <= 0:
            return
        below = self.virtual_size.height - (self.scroll_y + view)
        if self.end < len(self.items) and below < view:
            self._run(self._load_newer())
        elif self.start > 0 and self.scroll_y < view:
            self._run(self._load_older())

    # ------------------------------------------------------------ growing at the edges

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self._loading:
            return
        if new <= 1 and old > new:
            self._reached_top()
        elif new >= self.max_scroll_y - 1 and new > old:
            self._reached_bottom()
        if self.start > 0 or self.end < len(self.items):
            self._fill_later()

    def on_mouse_scroll_up(self) -> None:
        # content shorter than the view never changes scroll_y: the wheel is the only signal
        if self.scroll_y <= 1 and not self._loading:
            self._reached_top()

    def on_mouse_scroll_down(self) -> None:
        if self.scroll_y >= self.max_scroll_y - 1 and not self._loading:
            self._reached_bottom()

    def _reached_top(self) -> None:
        if self.start > 0:
            self._run(self._load_older())  # at the edge, even when the window is full (its far end goes)
        elif self.items:
            self._reached_first()

    def _reached_bottom(self) -> None:
        if self.end < len(self.items):
            self._run(self._load_newer())
        elif not self.is_anchored:
            self.anchor()  # back at the real end: follow new messages again

    async def _load_older(self) -> None:
        if self._loading or self.start == 0:
            return
        self._loading = True
        try:
            first = next(iter(self._views()), None)
            was = first.virtual_region.y if first is not None else 0
            new_start = max(self.start - CHUNK, 0)
            moved = await self.items.load(new_start, self.start)
            self.start -= moved
            self.end -= moved
            views = [self._view(item) for item in self.items[new_start : self.start]]
            self.start = new_start
            with self.app.batch_update():
                await self.mount_all(views, before=first) if first else await self.mount_all(views)
                for view in views:
                    self._decorate(view)
            if first is not None:
                # keep what the user was reading in place: the new rows grow above it
                self.call_after_refresh(self._keep_place, first, was)
            if self.end - self.start > MAX_MOUNTED:
                await self._unmount_tail(self.end - self.start - MAX_MOUNTED)
            self.items.let_go(self.start, self.end)
        finally:
            self._loading = False
        self._fill_later()

    def _keep_place(self, first: MessageView, was: int) -> None:
        if self.following:
            return  # at the followed end there is no place to keep, and a scroll would release it
        shift = first.virtual_region.y - was
        if shift > 0 and first.is_attached:
            self.scroll_to(y=self.scroll_y + shift, animate=False, immediate=True)

    async def _load_newer(self) -> None:
        if self._loading or self.end >= len(self.items):
            return
        self._loading = True
        try:
            new_end = min(self.end + CHUNK, len(self.items))
            new_end -= await self.items.load(self.end, new_end)
            views = [self._view(item) for item in self.items[self.end : new_end]]
            self.end = new_end
            await self.mount_all(views, before=self.streaming)
            for view in views:
                self._decorate(view)
            if self.end - self.start > MAX_MOUNTED:
                await self._unmount_head(self.end - self.start - MAX_MOUNTED)
            self.items.let_go(self.start, self.end)
        finally:
            self._loading = False
        self._fill_later()

    async def _unmount_head(self, count: int, keep_place: bool = True) -> None:
        """Unmount the first ``count`` views; what is on screen stays where it is (``keep_place``;
        at the anchored bottom there is nothing to keep: the view follows the end)."""
        views = self._views()
        gone = views[:count]
        if not gone:
            return
        keep = views[len(gone)] if len(gone) < len(views) else None
        shift = keep.virtual_region.y - gone[0].virtual_region.y if keep is not None else 0
        self.start += len(gone)
        with self.app.batch_update():
            await self.remove_children(gone)
            if shift > 0 and keep_place and not self.following:
                self.scroll_to(y=max(self.scroll_y - shift, 0), animate=False, immediate=True)

    async def _unmount_tail(self, count: int) -> None:
        views = self._views()[-count:]
        self.end -= len(views)
        await self.remove_children(views)
