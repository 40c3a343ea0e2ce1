"""Ctrl+C while a prompt runs from the command line (`-p`, `--mode json`): the run is stopped (its
partial reply kept) and the caller is told it was interrupted, for its exit status."""

from __future__ import annotations

import asyncio
import signal as signals
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Interrupted:
    """Whether Ctrl+C came while the block ran."""

    def __init__(self) -> None:
        self.happened = False


@contextmanager
def stop_on_ctrl_c(stop: Callable[[], None]) -> Iterator[Interrupted]:
    """While the block runs, SIGINT calls `stop` (and is noted) instead of raising
    KeyboardInterrupt through the event loop; where signals cannot be handled (not the main
    thread) nothing changes."""
    loop = asyncio.get_running_loop()
    seen = Interrupted()

    def on_sigint() -> None:
        seen.happened = True
        stop()

    try:
        loop.add_signal_handler(signals.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        installed = False
    try:
        yield seen
    finally:
        if installed:
            loop.remove_signal_handler(signals.SIGINT)
