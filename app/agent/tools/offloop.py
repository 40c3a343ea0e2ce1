"""Blocking file work for tools, off the event loop and stoppable.

A tool that reads files on the event loop freezes the whole app (Ctrl+C included) while a read
blocks — a FIFO with no writer, a device, a hung network mount (issue 15). So file tools run their
work on a daemon thread that checks a stop flag, and the coroutine returns as soon as the run is
aborted, without waiting for a read that may never end (a daemon thread never holds up exit).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from treechat.llm.abort import AbortSignal

from .file_scan import NotRegular, open_regular, special_kind

__all__ = ["ToolCancelled", "Stop", "off_loop", "NotRegular", "open_regular", "special_kind"]

T = TypeVar("T")


class ToolCancelled(Exception):
    """The run was aborted while the tool's thread worked; the text is the tool's result."""


class Stop:
    """The thread's view of "stop now": the run was aborted, the tool was cancelled, or time is up."""

    def __init__(self, deadline: float | None = None) -> None:
        self._event = threading.Event()
        self.deadline = deadline  # time.monotonic() after which the work should wrap up
        self.why = ""

    def set(self, why: str = "cancelled") -> None:
        if not self._event.is_set():
            self.why = why
            self._event.set()

    def __call__(self) -> bool:
        """True when the work should stop (checked between files and every few thousand lines)."""
        if self._event.is_set():
            return True
        if self.deadline is not None:
            if time.monotonic() >= self.deadline:
                self.set("time")
                return True
        return False


async def off_loop(work: Callable[[Stop], T], signal: AbortSignal | None, stop: Stop | None = None) -> T:
    """Run `work(stop)` on a daemon thread. Abort sets `stop` and raises ToolCancelled at once;
    cancelling the coroutine sets `stop` too. The thread finishes (or not) on its own."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    stop = stop or Stop()

    def deliver(setter: Callable[[], None]) -> None:
        if not future.done():
            setter()

    def run() -> None:
        failure: BaseException | None = None
        try:
            result = work(stop)
        except BaseException as err:  # noqa: BLE001  handed to the awaiting coroutine, which raises it
            failure = err

        def outcome() -> None:
            if failure is not None:
                future.set_exception(failure)
            else:
                future.set_result(result)

        try:
            loop.call_soon_threadsafe(deliver, outcome)
        except RuntimeError:  # the loop is gone: nobody is waiting
            pass

    threading.Thread(target=run, name="treechat-tool", daemon=True).start()
    def on_abort() -> None:
        stop.set()
        deliver(lambda: future.set_exception(ToolCancelled("Stopped: the run was cancelled.")))

    remove = signal.add_listener(on_abort) if signal else (lambda: None)
    try:
        return await future
    except asyncio.CancelledError:
        stop.set()
        raise
    finally:
        remove()
