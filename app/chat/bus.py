"""The controller's bus: changes collected over one turn of the event loop, told as one delta.

One send used to tell 21 events (7 status, 4 appends, 2 headers...), each a Textual message, and a
handler that read the controller afterwards saw what later appends had already changed. Here
the roles record what changed (`emit` of a `Change`); the first change of a turn schedules a
flush with `call_soon`, and the flush makes one frozen `ChatDelta`: the parts recorded, and the
header and status computed once (left out when equal to the last ones told). A discrete event
(`emit` of anything else: a streamed reply's text, a notice, a session opened) flushes what is
pending first, so listeners see every change in the order it happened.

A listener must not raise (the TUI's posts a message; a test's appends to a list): the bus is
called from the controller's own observers, whose callers cannot own a front end's error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from treechat.chat.events import (
    Change,
    ChatDelta,
    ChatEvent,
    EntryAppended,
    Header,
    HeaderChanged,
    LabelChanged,
    PathChanged,
    QueueChanged,
    ReplyStreaming,
    RunEnded,
    RunsChanged,
    RunStarted,
    RunTip,
    SessionOpened,
    Status,
    StatusChanged,
)

Listener = Callable[[ChatEvent], None]
Runs = tuple[tuple[RunTip, ...], bool]  # the runs going, and whether one goes on the branch on screen


class ChatBus:
    def __init__(self, status: Callable[[], Status | None], header: Callable[[], Header | None],
                 runs: Callable[[], Runs | None] = lambda: None) -> None:
        self._status, self._header, self._runs = status, header, runs
        self._listeners: list[Listener] = []
        self._scheduled = False
        self._clear()
        self._told_status: Status | None = None
        self._told_header: Header | None = None
        self._told_queue = QueueChanged((), ())
        self._told_runs: Runs = ((), False)

    def _clear(self) -> None:
        self._appended: list[EntryAppended] = []
        self._labels: list[LabelChanged] = []
        self._path: PathChanged | None = None
        self._path_after = 0
        self._queue: QueueChanged | None = None
        self._status_dirty = self._header_dirty = self._runs_dirty = False

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, event: ChatEvent | Change) -> None:
        if type(event) is ReplyStreaming and not self._scheduled:  # once per network read: nothing pending, no work
            self._tell(event)
            return
        match event:
            case EntryAppended():
                self._appended.append(event)
            case LabelChanged():
                self._labels.append(event)
            case PathChanged():
                self._path, self._path_after = event, len(self._appended)
                self._runs_dirty = True  # the leaf may have come onto a run's tip, or left it
            case QueueChanged():
                self._queue = event
            case RunStarted() | RunEnded():
                self._runs_dirty = self._header_dirty = self._status_dirty = True
            case RunsChanged():
                self._runs_dirty = self._header_dirty = True
            case StatusChanged():
                self._status_dirty = True
            case HeaderChanged():
                self._header_dirty = True
            case _:
                self.flush()
                if isinstance(event, SessionOpened):  # the view is drawn from it: later deltas tell differences
                    self._told_status, self._told_header = event.status, event.header
                    self._told_queue = QueueChanged((), ())
                    self._told_runs = ((), False)
                self._tell(event)
                return
        self._schedule()

    def _schedule(self) -> None:
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): nothing to wait for
            self._scheduled = True
            self.flush()
            return
        self._scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Tell what is pending now, as one delta (nothing when nothing visible changed)."""
        if not self._scheduled:
            return  # nothing was recorded since the last flush
        self._scheduled = False
        status = self._status() if self._status_dirty else None
        header = self._header() if self._header_dirty else None
        if status is not None and status == self._told_status:
            status = None
        if header is not None and header == self._told_header:
            header = None
        queue = self._queue if self._queue != self._told_queue else None
        runs = self._runs() if self._runs_dirty else None
        tips = runs[0] if runs is not None and runs[0] != self._told_runs[0] else None
        running = runs[1] if runs is not None and runs[1] != self._told_runs[1] else None
        delta = ChatDelta(appended=tuple(self._appended), labels=tuple(self._labels), path=self._path,
                          path_after=self._path_after, header=header, status=status, queue=queue,
                          running=running, runs=tips)
        self._clear()
        if delta == EMPTY:
            return
        self._told_status = status or self._told_status
        self._told_header = header or self._told_header
        self._told_queue = queue or self._told_queue
        self._told_runs = runs or self._told_runs
        self._tell(delta)

    def _tell(self, event: ChatEvent) -> None:
        for listener in list(self._listeners):
            listener(event)


EMPTY = ChatDelta()
