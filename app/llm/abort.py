"""A cancellation signal shared by one agent run: the stream, the tools and the listeners see it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class AbortSignal:
    """Set once by `abort()`; everything that does I/O for the run checks it or listens to it."""

    def __init__(self) -> None:
        self._aborted = False
        self.reason: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self, reason: str | None = None) -> None:
        if self._aborted:
            return
        self._aborted = True
        self.reason = reason or "Request was aborted"
        if self._event is not None:
            self._event.set()
        for listener in list(self._listeners):
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self._aborted:
                self._event.set()
        await self._event.wait()
