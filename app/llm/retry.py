"""The one retry layer: failures before the first response byte are retried here, nowhere else.

Once a stream has started, a failure becomes an assistant message with stopReason `error`
(partial content kept); re-sending is then a decision for the session, not for HTTP.
Context overflow, auth, billing and not-found are never retried.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Awaitable, Callable, TypeVar

from .abort import AbortSignal
from .errors import ProviderError

T = TypeVar("T")


@dataclass
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 1.0  # seconds; doubles per attempt when the server gives no Retry-After
    max_delay: float = 60.0  # a server asking for longer than this fails at once with its message
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)

    def delay_for(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds before retry `attempt` (1-based), or None when we should give up."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        return min(self.base_delay * 2 ** (attempt - 1), self.max_delay)


async def with_retry(
    attempt_fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    signal: AbortSignal | None = None,
    on_retry: Callable[[int, float, str], object] | None = None,
) -> T:
    """Run `attempt_fn` until it succeeds or raises a ProviderError we should not retry."""
    attempt = 0
    while True:
        try:
            return await attempt_fn()
        except ProviderError as error:
            attempt += 1
            delay = policy.delay_for(attempt, error)
            if delay is None or (signal is not None and signal.aborted):
                raise
            if on_retry is not None:
                result = on_retry(attempt, delay, str(error))
                if inspect.isawaitable(result):
                    await result
            await _sleep_unless_aborted(policy, delay, signal)


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
