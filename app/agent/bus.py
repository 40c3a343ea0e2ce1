"""One typed event bus for the agent core: the Agent's events, the AgentSession's, a Session's changes.

A listener is a callable taking one event; it may be async (`emit` awaits it before calling the
next one, so listeners see events in order and a slow listener holds the emitter back: that is
how a message is persisted before the request that follows it goes out).

The contract, for every bus:
- A listener **must not raise**. If one does, the other listeners still get the event; then the
  first exception is raised from `emit` to the emitter, which owns what it means (the Agent ends
  the run with it as an error reply, as Pi does; a Session's append has already been stored and
  the caller hears of the failure). Further exceptions from the same event are logged here
  (logger `treechat.agent.bus`), never lost silently.
- Listeners run in subscription order; one subscribed or unsubscribed during an emit takes part
  from the next event on.
- `subscribe` returns the unsubscribe function; calling it twice is harmless.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")

Listener = Callable[[E], Awaitable[None] | None]
Unsubscribe = Callable[[], None]


async def maybe_await(value: Awaitable[T] | T) -> T:
    """A hook's value, awaited if it is awaitable (hooks may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


class EventBus(Generic[E]):
    def __init__(self) -> None:
        self._listeners: list[Listener[E]] = []

    def subscribe(self, listener: Listener[E]) -> Unsubscribe:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def __len__(self) -> int:
        return len(self._listeners)

    async def emit(self, event: E) -> None:
        """Every listener gets `event`, each awaited before the next (see the module's contract)."""
        first: BaseException | None = None
        for listener in list(self._listeners):
            try:
                result = listener(event)
                if inspect.isawaitable(result):  # what a sync listener returns is ignored
                    await result
            except Exception as err:  # noqa: BLE001  a listener's failure: the others still hear, the emitter gets it
                first = _keep_first(first, err, event)
        if first is not None:
            raise first

    def emit_now(self, event: E) -> None:
        """`emit` for synchronous listeners, from code that cannot await (a Session's observers
        are told before its append returns). A listener returning an awaitable breaks the
        contract: the awaitable is closed and the error logged."""
        first: BaseException | None = None
        for listener in list(self._listeners):
            try:
                result = listener(event)
                if inspect.isawaitable(result):
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
                    raise TypeError(f"{listener!r} is async; this bus calls its listeners synchronously")
            except Exception as err:  # noqa: BLE001  as in emit: the others still hear
                first = _keep_first(first, err, event)
        if first is not None:
            raise first


def _keep_first(first: BaseException | None, err: Exception, event: object) -> BaseException:
    if first is None:
        return err
    log.error("a listener failed on %s after another had", type(event).__name__, exc_info=err)
    return first
