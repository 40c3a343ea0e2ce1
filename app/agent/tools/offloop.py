"""Blocking file work for tools, off the event loop and stoppable.

A tool that reads files on the event loop freezes the whole app (Ctrl+C included) while a read
blocks — a FIFO with no writer, a device, a hung network mount (issue 15). So file tools run their
work on a daemon thread that checks a stop flag, and the coroutine returns as soon as the run is
aborted, without waiting for a read that may never end (a daemon thread never holds up exit).
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from typing import Callable, TypeVar

from treechat.llm.abort import AbortSignal

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
        except BaseException as err:  # handed to the awaiting coroutine
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


SPECIAL_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
                 stat.S_IFBLK: "a block device"}


class NotRegular(OSError):
    """The path is a FIFO, socket or device: opening or reading it could block forever."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def special_kind(mode: int) -> str | None:
    """"a FIFO" / "a socket" / "a … device" for such a mode, else None."""
    return SPECIAL_KINDS.get(stat.S_IFMT(mode))


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor for a regular file; raises NotRegular for anything else.

    Checked before opening (a FIFO's open blocks until a writer comes) and again on the
    descriptor (the path may have been swapped in between); O_NONBLOCK keeps that open from
    blocking, and has no effect on regular files."""
    kind = special_kind(os.stat(path).st_mode)
    if kind:
        raise NotRegular(kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(special_kind(mode) or "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
