"""The stdio framing of `treechat acp`: one JSON-RPC message per line, in both directions.

The package's own stdio reader keeps a line of any length in memory and drops a line that is not
JSON with only a log record; ours hands the package (as its message-level `Transport`) only
well-formed messages, and answers everything else itself, so a client always hears why:

- a line over `MAX_LINE` bytes is skipped as it streams in (never held whole) and answered with
  "Invalid request" (-32600);
- a line that is not JSON, or JSON nested past what the parser takes, gets "Parse error" (-32700);
- JSON that is no JSON-RPC message (an array, a number, no method and no id, a method that is no
  string, an id that is an object) gets "Invalid request".

When the client closes stdin, the requests it sent are still answered before the input ends for
the package (a run finishes, its reply stored; `EOF_WAIT` at most): `treechat acp < requests`
works as a script, and an editor that is gone simply stops reading.

Only protocol messages reach the real stdout: `ProtocolOut.claim()` keeps it for us and points
file descriptor 1 at stderr, so a stray print (ours, a library's, a child's) cannot corrupt the
stream. LF ends a message; U+2028 inside a JSON string does not.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from treechat.bounded_json import RawJson

MAX_LINE = 32 * 1024 * 1024  # one message: five 5 MB images in base64, or a 10 MB file the editor sends back
READ_CHUNK = 64 * 1024
EOF_WAIT = 3600.0  # seconds the requests in flight get after the input ends (a run's own longest)

Json = RawJson  # a decoded JSON value (the package's messages are plain dicts)


@dataclass(frozen=True)
class TooLong:
    """A line that passed `MAX_LINE`: skipped, only its length kept."""

    size: int


class LineReader:
    """Lines from a byte source, each at most `max_line` bytes; a longer one is skipped as it
    arrives (the buffer never holds more than `max_line` plus one chunk)."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], max_line: int = MAX_LINE) -> None:
        self._read = read
        self.max_line = max_line
        self._buffer = bytearray()
        self._skipped = 0  # bytes of an over-long line dropped so far (0: not skipping)
        self._eof = False

    async def next(self) -> bytes | TooLong | None:
        """The next line (without its LF), a `TooLong`, or None at the end of the input."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[:newline + 1]
                if self._skipped:
                    size, self._skipped = self._skipped + len(line), 0
                    return TooLong(size)
                if len(line) > self.max_line:
                    return TooLong(len(line))
                return line
            if len(self._buffer) > self.max_line:
                self._skipped += len(self._buffer)
                self._buffer.clear()
            if self._eof:
                if self._skipped:
                    size, self._skipped = self._skipped + len(self._buffer), 0
                    self._buffer.clear()
                    return TooLong(size)
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            chunk = await self._read()
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


def error_reply(request_id: Json, code: int, message: str, details: str) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message,
                                                         "data": {"details": details}}}


def problem(message: Json) -> tuple[Json, str] | None:
    """(the id to answer, why) when `message` is no JSON-RPC message; None when it is one."""
    if not isinstance(message, dict):
        return None, "a message must be a JSON object (batches are not supported)"
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | float | type(None)):
        return None, "an id must be a string or a number"
    if "method" in message:
        if not isinstance(message["method"], str):
            return request_id, "a method must be a string"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None  # a response to one of our requests
    return request_id, "neither a request (method) nor a response (result or error)"


Send = Callable[[dict[str, Json]], Awaitable[None]]


class StdioTransport:
    """The package's message `Transport` over our bounded lines (see the module's doc)."""

    def __init__(self, lines: LineReader, write: Callable[[bytes], Awaitable[None]],
                 close: Callable[[], None] = lambda: None) -> None:
        self._lines, self._write, self._close = lines, write, close
        self._sending = asyncio.Lock()  # one message at a time: lines never interleave
        self._unanswered: Counter[str] = Counter()  # the client's requests in flight, by id
        self._answered = asyncio.Event()
        self._closed = False

    async def receive(self) -> dict[str, Json] | None:
        while True:
            line = await self._lines.next()
            if line is None:
                await self._in_flight_answered()
                return None
            if isinstance(line, TooLong):
                await self.send(error_reply(None, -32600, "Invalid request",
                                            f"a message of {line.size:,} bytes was skipped: the limit is "
                                            f"{self._lines.max_line:,} bytes"))
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError) as err:  # (RecursionError: nested deeper than the parser goes)
                await self.send(error_reply(None, -32700, "Parse error", _parse_problem(err)))
                continue
            found = problem(message)
            if found is not None:
                await self.send(error_reply(found[0], -32600, "Invalid request", found[1]))
                continue
            if "method" in message and "id" in message:
                self._unanswered[_key(message["id"])] += 1
            return dict(message)

    async def _in_flight_answered(self) -> None:
        try:
            while +self._unanswered:
                self._answered.clear()
                await asyncio.wait_for(self._answered.wait(), EOF_WAIT)
        except TimeoutError:
            pass

    async def send(self, message: dict[str, Json]) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # half a UTF-16 pair in some text: JSON's \ud800 escape says it exactly
            data = json.dumps(message, separators=(",", ":")).encode("ascii")
        try:
            async with self._sending:
                await self._write(data + b"\n")
        finally:
            if "method" not in message and "id" in message and self._unanswered[_key(message["id"])] > 0:
                self._unanswered[_key(message["id"])] -= 1  # answered (or the client is gone): once written
                self._answered.set()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()


def _key(request_id: Json) -> str:
    return json.dumps(request_id)


def _parse_problem(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "the message is nested too deeply"
    return f"not JSON ({str(err)[:200]})"


# ---------------------------------------------------------------- the process's stdin and stdout


class _Out(asyncio.Protocol):
    """Flow control for the protocol's stdout: a write waits while the client is not reading."""

    def __init__(self) -> None:
        self._ready = asyncio.Event()
        self._ready.set()
        self.lost = False

    def pause_writing(self) -> None:
        self._ready.clear()

    def resume_writing(self) -> None:
        self._ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._ready.set()

    async def drained(self) -> None:
        await self._ready.wait()


def _streams(fd: int) -> bool:
    """A pipe, socket or terminal (asyncio can watch it); else a regular file, read on a thread."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class ProtocolOut:
    """The real stdout, kept for protocol messages; fd 1 then writes to stderr."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def claim(cls) -> ProtocolOut:
        fd = os.dup(1)
        os.dup2(2, 1)
        return cls(fd)


async def open_stdio(out: ProtocolOut, max_line: int = MAX_LINE) -> StdioTransport:
    """The transport over this process's stdin and the stdout `out` kept."""
    loop = asyncio.get_running_loop()
    closers: list[Callable[[], None]] = []
    read: Callable[[], Awaitable[bytes]]
    if _streams(0):
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        stdin_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                          os.fdopen(os.dup(0), "rb", buffering=0))
        closers += [stdin_transport.close, lambda: os.set_blocking(0, True)]  # (a terminal's shell needs it back)

        async def read() -> bytes:
            return await reader.read(READ_CHUNK)
    else:
        async def read() -> bytes:
            return await asyncio.to_thread(os.read, 0, READ_CHUNK)

    write: Callable[[bytes], Awaitable[None]]
    if _streams(out.fd):
        protocol = _Out()
        stdout_transport, _ = await loop.connect_write_pipe(lambda: protocol,
                                                            os.fdopen(out.fd, "wb", buffering=0))
        stdout_transport.set_write_buffer_limits(high=0)  # a write waits until the pipe took it all: none is lost at exit
        closers += [lambda: os.set_blocking(out.fd, True), stdout_transport.close]

        async def write(data: bytes) -> None:
            if protocol.lost:
                raise ConnectionError("the client stopped reading")
            stdout_transport.write(data)
            await protocol.drained()
    else:
        async def write(data: bytes) -> None:
            await asyncio.to_thread(_write_all, out.fd, data)

    def close() -> None:
        for closer in closers:
            closer()

    return StdioTransport(LineReader(read, max_line), write, close)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["MAX_LINE", "LineReader", "TooLong", "StdioTransport", "ProtocolOut", "open_stdio", "error_reply", "problem"]
