"""The one retry layer: failures before the first response byte are retried here, nowhere else.

Once a stream has started, a failure becomes an assistant message with stopReason `error`
(partial content kept); re-sending is then a decision for the session, not for HTTP.
Context overflow, auth, billing, not-found and timeouts are never retried.

Waits are capped, because a person is watching: one wait at most `max_delay` (30 s) and all the
waits of one request at most `max_total_wait` (60 s). A server asking for longer (Retry-After)
fails at once with its message and the delay it asked for, so the person decides; before, a
Retry-After of 30 s cost 91 s of silence (issue 15). Every wait is announced before it starts
(`on_retry`), so front ends show a countdown.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .abort import AbortSignal
from .errors import ProviderError

T = TypeVar("T")


@dataclass
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 1.0  # seconds; doubles per attempt when the server gives no Retry-After
    max_delay: float = 30.0  # one wait; a server asking for longer fails at once with its message
    max_total_wait: float = 60.0  # all the waits of one request together
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)

    def delay_for(self, attempt: int, error: ProviderError, waited: float = 0.0) -> float | None:
        """Seconds before retry `attempt` (1-based), or None when we should give up.

        `waited`: the seconds already spent waiting for earlier retries of the same request."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if error.retry_after is not None:
            delay = error.retry_after
            if delay > self.max_delay:
                return None
        else:
            delay = min(self.base_delay * 2 ** (attempt - 1), self.max_delay)
        return delay if waited + delay <= self.max_total_wait else None


async def with_retry(
    attempt_fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    signal: AbortSignal | None = None,
    on_retry: Callable[[int, float, ProviderError], object] | None = None,
) -> T:
    """Run `attempt_fn` until it succeeds or raises a ProviderError we should not retry.

    `on_retry(attempt, delay, error)` is called (and awaited if it returns an awaitable) just
    before each wait."""
    attempt = 0
    waited = 0.0
    while True:
        try:
            return await attempt_fn()
        except ProviderError as error:
            attempt += 1
            delay = policy.delay_for(attempt, error, waited)
            if signal is not None and signal.aborted:
                raise
            if delay is None:
                raise _gave_up(error, policy) from None
            if on_retry is not None:
                result = on_retry(attempt, delay, error)
                if inspect.isawaitable(result):
                    await result
            await _sleep_unless_aborted(policy, delay, signal)
            waited += delay


def _gave_up(error: ProviderError, policy: RetryPolicy) -> ProviderError:
    """The error to report, saying so when the server asked for a longer wait than we accept."""
    if error.retryable and error.retry_after is not None and error.retry_after > policy.max_delay:
        text = f"{error} (The server asks to wait {error.retry_after:.0f} s before trying again.)"
        return ProviderError(error.kind, text, status=error.status, retry_after=error.retry_after, retryable=False)
    return error


async def _sleep_unless_aborted(policy: RetryPolicy, delay: float, signal: AbortSignal | None) -> None:
    if signal is None:
        await policy.sleep(delay)
        return
    sleeper = asyncio.ensure_future(policy.sleep(delay))
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        waiter.cancel()
    if signal.aborted:
        raise ProviderError("aborted", "Request was aborted")
