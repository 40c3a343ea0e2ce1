"""What one MCP server may cost, besides the bytes of one answer (the transports count those).

- **Items per answer**: a JSON value costs far more as Python objects than as text (15 MB of
  `{"type":"text","text":""}` blocks became 800 MB of dicts before the SDK made 1.3 GB of models
  of them). `ItemCounter` counts the objects and lists of an answer as its bytes arrive, outside
  strings, at C speed (regexes, `bytes.count`); past MAX_ITEMS the answer is refused before anything
  is built from it (stdio: `stdio.py`, HTTP: `http.py`).
- **Messages per second**: `Gate` stands between a transport and the SDK's session. Notifications
  (logging, progress, list_changed, …) beyond NOTIFY_BURST at once and NOTIFY_RATE a second are
  dropped before the SDK sees them; and past READ_BURST messages at once and READ_RATE a second,
  it stops taking messages from the transport for a while, which stops reading the server's pipe
  or socket: a server that floods then waits on its own writes, and an idle app stays idle.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TypeAlias

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream  # (the SDK names it there only)

MAX_ITEMS = 20_000  # JSON objects and lists in one answer (a page of tools, a call's result)
NOTIFY_RATE, NOTIFY_BURST = 10.0, 50  # notifications passed on: a second, and at once
READ_RATE, READ_BURST = 200.0, 1_000  # messages read from a server: a second, and at once

_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)


class TooManyItems(ValueError):
    """An answer with more objects and lists than its bound."""


class ItemCounter:
    """The JSON objects and lists in bytes fed in pieces (strings skipped, split anywhere).
    `per_event`: the bytes are an SSE stream, and each event (up to a blank line) is counted on
    its own; a line break also ends any string (JSON strings hold none)."""

    def __init__(self, limit: int = MAX_ITEMS, *, per_event: bool = False) -> None:
        self.limit, self.per_event = limit, per_event
        self.count = 0
        self._in_string = self._escaped = False
        self._blank = True  # the SSE line so far is empty

    def feed(self, data: bytes) -> None:
        """Count `data`; raises TooManyItems once the count passes the limit."""
        if not self.per_event:
            self._scan(data)
            return
        start = 0
        while True:
            end = data.find(b"\n", start)
            line = data[start:] if end < 0 else data[start:end]
            if line.strip(b"\r"):
                self._blank = False
                self._scan(line)
            if end < 0:
                return
            if self._blank:
                self.count = 0  # a blank line: the event is over
            self._blank, self._in_string, self._escaped = True, False, False
            start = end + 1

    def _scan(self, data: bytes) -> None:
        at = 0
        if self._in_string:
            if self._escaped:
                if not data:
                    return
                at, self._escaped = 1, False
            match = _STRING_REST.match(data, at)
            end = match.end() if match is not None else at
            if end >= len(data):
                return  # the string goes on
            if data[end] == 0x5C:  # a backslash, the last byte: what it escapes comes next
                self._escaped = True
                return
            self._in_string, at = False, end + 1
        rest = data[at:] if at else data
        skeleton = _STRINGS.sub(b"", rest)
        quote = skeleton.find(b'"')
        if quote >= 0:  # a string starts and does not end here
            skeleton = skeleton[:quote]
            self._in_string = True
            self._escaped = (len(rest) - len(rest.rstrip(b"\\"))) % 2 == 1
        self.count += skeleton.count(b"{") + skeleton.count(b"[")
        if self.count > self.limit:
            raise TooManyItems(f"the server's answer held over {self.limit:,} JSON objects and lists; "
                               "treechat did not read it")


def count_items(data: bytes) -> int:
    """The JSON objects and lists in `data` (strings skipped)."""
    counter = ItemCounter(limit=len(data) + 1)
    counter.feed(data)
    return counter.count


@dataclass
class Bucket:
    """A token bucket: `rate` a second, at most `burst` at once."""

    rate: float
    burst: float
    clock: Callable[[], float] = time.monotonic
    tokens: float = field(init=False)
    at: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens, self.at = self.burst, self.clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now

    def take(self) -> bool:
        """Take a token if there is one."""
        self._refill()
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def wait(self) -> float:
        """Seconds until a token is there (0: one is)."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate


@dataclass
class GateCounts:
    """What a Gate let through, for `/mcp`-level words and the tests: messages, and notifications dropped."""

    taken: int = 0  # messages taken from the transport
    dropped: int = 0  # notifications not passed on
    waits: int = 0  # times reading paused for the rate


Received: TypeAlias = SessionMessage | Exception  # what a transport's read side hands the SDK


class Gate:
    """The read side of a transport, with the rates of the module's words (a `ReadStream` for the SDK)."""

    def __init__(self, inner: ReadStream[Received], counts: GateCounts | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.counts = counts if counts is not None else GateCounts()
        self.reads = Bucket(READ_RATE, READ_BURST, clock)
        self.notifications = Bucket(NOTIFY_RATE, NOTIFY_BURST, clock)

    async def receive(self) -> Received:
        while True:
            pause = self.reads.wait()
            if pause > 0:
                self.counts.waits += 1
                await anyio.sleep(pause)  # the transport's own buffer fills, and it stops reading
                continue
            self.reads.take()
            item = await self.inner.receive()
            self.counts.taken += 1
            if _is_notification(item) and not self.notifications.take():
                self.counts.dropped += 1
                continue
            return item

    def __aiter__(self) -> Gate:
        return self

    async def __anext__(self) -> Received:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Gate:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()


def _is_notification(item: Received) -> bool:
    return isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCNotification)


__all__ = ["MAX_ITEMS", "Bucket", "Gate", "GateCounts", "ItemCounter", "TooManyItems", "count_items"]
