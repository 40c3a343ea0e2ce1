"""JSON lines in and out, as Pi's RPC mode frames them (docs/rpc.md, "Framing"): one record per
line, LF the only delimiter (a trailing CR is dropped), so U+2028 and U+2029 inside a JSON string
are part of it, not line ends.

In: `Framer` cuts bytes into lines of at most `limit` bytes; a longer line is skipped as it
arrives (never held) and reported as `Overlong`, and the next line is read as usual. `read_fd`
reads a file descriptor in bounded chunks on a thread of its own (a pipe, a terminal or a file
alike; nothing is made non-blocking under the process that shares it).

Out: `json_line` writes compact JSON whose characters that act on a terminal or end a line for a
naive reader (C1 controls, bidi overrides, U+2028/U+2029, half a UTF-16 pair) are `\\uXXXX`
escapes: the same JSON value. `FdLines` writes lines to a file descriptor on a thread of its own,
in order, holding at most `max_pending` bytes before `send` waits (a client that stops reading
slows the agent down instead of filling memory).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, cast

from treechat.agent.types import Json, JsonObject
from treechat.text.sanitize import json_for_terminal

MAX_LINE_BYTES = 32 * 1024 * 1024  # one command: room for a prompt with a few 5 MB images (base64)
CHUNK = 65536
_LINE_ENDS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass(frozen=True)
class Overlong:
    """A line longer than the limit, skipped: how many bytes it had (at least)."""

    size: int


Line = bytes | Overlong


class Framer:
    """Bytes in, lines out (without their LF, and a CR before it dropped)."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._skipped: int | None = None  # bytes of an over-long line seen so far (None: not skipping)

    def feed(self, chunk: bytes) -> list[Line]:
        out: list[Line] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            out.append(self._finish(chunk[start:end]))
            start = end + 1
        self._hold(chunk[start:])
        return out

    def end(self) -> list[Line]:
        """What is left when the input ends: a last line without its LF."""
        if self._skipped is None and not self._buf:
            return []
        return [self._finish(b"")]

    def _hold(self, piece: bytes) -> None:
        if self._skipped is not None:
            self._skipped += len(piece)
        elif len(self._buf) + len(piece) > self.limit:
            self._skipped = len(self._buf) + len(piece)
            self._buf = bytearray()
        else:
            self._buf += piece

    def _finish(self, piece: bytes) -> Line:
        self._hold(piece)
        if self._skipped is not None:
            line: Line = Overlong(self._skipped)
            self._skipped = None
            return line
        data = bytes(self._buf)
        self._buf = bytearray()
        return data[:-1] if data.endswith(b"\r") else data


def json_line(value: JsonObject) -> bytes:
    """One record: compact JSON (as Pi's JSON.stringify), escaped where a terminal or a reader that
    splits on Unicode line separators would take it wrongly, and its LF.

    A reply's update carries the message so far twice (`message`, and its event's `partial`): it
    is written once and put in both places, and kept for the next update that carries the same
    object (the updates of one network read share one)."""
    update, message = value.get("assistantMessageEvent"), value.get("message")
    if value.get("type") != "message_update" or not isinstance(update, dict) or not isinstance(message, dict) \
            or update.get("partial") is not message:
        return (_dumps(value) + "\n").encode("utf-8")
    head = _dumps({**value, "message": _HOLE, "assistantMessageEvent": {**update, "partial": _HOLE}})
    return (head.replace(_HOLE_JSON, _written(cast(JsonObject, message))) + "\n").encode("utf-8")  # (a dict: above)


_HOLE = "\ue000treechat-message\ue000"  # (a private-use character: no text of ours is this)
_HOLE_JSON = json.dumps(_HOLE, ensure_ascii=False)
_last: tuple[JsonObject, str] | None = None  # the message last written, and its text


def _written(message: JsonObject) -> str:
    global _last
    if _last is None or _last[0] is not message:
        _last = (message, _dumps(message))
    return _last[1]


def _dumps(value: Json) -> str:
    return json_for_terminal(json.dumps(value, ensure_ascii=False, separators=(",", ":"))).translate(_LINE_ENDS)


class LineSink(Protocol):
    """Where protocol records go (stdout in the CLI, a list in tests)."""

    async def send(self, record: JsonObject) -> None: ...


class FdLines:
    """Records written to a file descriptor on a writer thread, in the order sent. A write that
    fails (the reader went away) stops the writing and calls `on_broken` once, on the loop."""

    def __init__(self, fd: int, *, max_pending: int = 8 * 1024 * 1024,
                 on_broken: Callable[[], None] | None = None) -> None:
        self.fd = fd
        self.max_pending = max_pending
        self.on_broken = on_broken
        self.broken = False
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._pending = 0
        self._room = asyncio.Event()
        self._room.set()
        self._thread = threading.Thread(target=self._write_all, name="treechat-protocol-out", daemon=True)
        self._thread.start()

    async def send(self, record: JsonObject) -> None:
        await self.send_bytes(json_line(record))

    async def send_bytes(self, data: bytes) -> None:
        if self.broken:
            return
        while self._pending > self.max_pending and not self.broken:
            self._room.clear()
            await self._room.wait()
        self._pending += len(data)
        self._queue.put(data)

    def _write_all(self) -> None:
        while (data := self._queue.get()) is not None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                self._call(self._broke)
                return
            self._call(self._written, len(data))

    def _call(self, fn: Callable[..., None], *args: int) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    def _written(self, size: int) -> None:
        self._pending -= size
        if self._pending <= self.max_pending:
            self._room.set()

    def _broke(self) -> None:
        if not self.broken:
            self.broken = True
            self._room.set()
            if self.on_broken is not None:
                self.on_broken()

    async def close(self, wait: float = 5.0) -> None:
        """Write what was sent (waiting at most `wait` seconds for a slow reader), then stop."""
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join, wait)


def read_fd(fd: int, chunk: int = CHUNK) -> Callable[[], Awaitable[bytes]]:
    """An async `read()` of `fd` in chunks of at most `chunk` bytes (b"": the end), read on a
    daemon thread that stays at most two chunks ahead of the reader."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=2)

    def pump() -> None:
        while True:
            try:
                data = os.read(fd, chunk)
            except OSError:
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):  # the loop is gone: nobody reads any more
                return
            if not data:
                return

    threading.Thread(target=pump, name="treechat-protocol-in", daemon=True).start()
    return chunks.get
