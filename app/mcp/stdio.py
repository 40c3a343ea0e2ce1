"""A server run as a program, spoken to over its stdin and stdout (newline-delimited JSON-RPC).

Ours rather than the SDK's `stdio_client`, for the bounds the SDK does not keep:
- one message is at most `max_message` bytes: a longer line is read past and never held whole,
  and the request it answered fails with a sentence (the server stays usable);
- one message holds at most `bounds.MAX_ITEMS` JSON objects and lists, counted on its bytes
  before it is parsed (a message of many empty blocks costs 100 times its size as objects);
- the server's stderr never reaches the terminal: its last few KB are kept for the one line that
  says why it stopped;
- the server runs in its own process group, and everything it started is killed with it.

It hands the SDK's `Client` the same pair of streams the SDK's own transport does.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from .bounds import MAX_ITEMS, count_items

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams  # (the SDK names it there only)

STDERR_KEEP = 8192  # bytes of the server's stderr kept (the tail), for "why it stopped"
ITEMS_FROM = 64 * 1024  # a message this long or longer has its items counted before it is parsed
CHUNK = 65536
EXIT_GRACE = 2.0  # seconds a server gets to exit after its stdin closes, and again after SIGTERM
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


@dataclass
class Launch:
    """The program to run, its environment (already expanded) and folder."""

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str


@dataclass
class ProcessInfo:
    """What the transport saw: the server's stderr tail and how it ended."""

    stderr: bytearray = field(default_factory=bytearray)
    exit_status: int | None = None
    ended: bool = False  # its stdout closed: it exited or stopped talking
    on_end: Callable[[], None] | None = None
    graceful: bool = False  # it got as far as answering: let it exit on its own before it is killed

    def last_words(self) -> str:
        """The server's last non-empty stderr line (a traceback's last line says what failed)."""
        lines = [line.strip() for line in self.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


@asynccontextmanager
async def stdio_transport(launch: Launch, info: ProcessInfo, *, max_message: int) -> AsyncIterator[TransportStreams]:
    """Run `launch` and yield (read stream, write stream) for the SDK's Client. Raises OSError
    when the program cannot be started."""
    process = await anyio.open_process([launch.command, *launch.args], env=launch.env, cwd=launch.cwd,
                                       start_new_session=True)
    reader_send, reader_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    writer_send, writer_receive = anyio.create_memory_object_stream[SessionMessage](16)

    async def read_stdout() -> None:
        assert process.stdout is not None
        try:
            async with reader_send:
                await _read_messages(process, reader_send, max_message)
        finally:
            info.ended = True
            info.exit_status = process.returncode
            if info.on_end is not None:
                info.on_end()

    async def read_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                info.stderr.extend(await process.stderr.receive(CHUNK))
                if len(info.stderr) > STDERR_KEEP:
                    del info.stderr[: len(info.stderr) - STDERR_KEEP]

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with writer_receive:
                async for message in writer_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await reader_send.aclose()  # the session sees the end instead of waiting on an answer

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(read_stderr)
        tg.start_soon(write_stdin)
        try:
            yield reader_receive, writer_send
        finally:
            with anyio.CancelScope(shield=True):
                await writer_send.aclose()
                await _stop(process, EXIT_GRACE if info.graceful else 0.1)
                info.exit_status = process.returncode
            tg.cancel_scope.cancel()


async def _read_messages(process: Process, out: MemoryObjectSendStream[SessionMessage | Exception],
                         max_message: int) -> None:
    """Lines from stdout as messages, each at most `max_message` bytes; a longer one is skipped
    and answered, for the request it belonged to, with an error that says so."""
    assert process.stdout is not None
    buffer = bytearray()
    skipping: bytes | None = None  # the head of an over-long line being read past
    while True:
        try:
            chunk = await process.stdout.receive(CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if skipping is not None:
                if newline >= 0:
                    await _send(out, _too_large(skipping, max_message))
                    skipping = None
            elif len(buffer) + len(piece) > max_message:
                skipping = bytes(buffer[:4096] + piece[:4096])
                buffer.clear()
                if newline >= 0:
                    await _send(out, _too_large(skipping, max_message))
                    skipping = None
            else:
                buffer.extend(piece)
                if newline >= 0:
                    line, buffer = bytes(buffer), bytearray()
                    if len(line) >= ITEMS_FROM and count_items(line) > MAX_ITEMS:
                        await _send(out, _refused(line[:4096], f"the server's answer held over {MAX_ITEMS:,} JSON "
                                                  "objects and lists; treechat did not read it"))
                    elif line.strip():
                        await _send(out, _parse(line))
            if newline < 0:
                break
            start = newline + 1


async def _send(out: MemoryObjectSendStream[SessionMessage | Exception], item: SessionMessage | Exception | None) -> None:
    if item is not None:
        await out.send(item)


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as err:
        return err


def _too_large(head: bytes, limit: int) -> SessionMessage | None:
    return _refused(head, f"the server's answer was over {limit // 1_000_000} MB; treechat did not read it")


def _refused(head: bytes, why: str) -> SessionMessage | None:
    """The error response that ends the request a line too large to read answered (None: its id
    is not in its first bytes; the request then ends at its timeout)."""
    match = _ID.search(head)
    if match is None:
        return None
    raw = match.group(1)
    request_id: int | str = int(raw) if raw[:1] != b'"' else raw[1:-1].decode("utf-8", "replace")
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=why)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _stop(process: Process, grace: float) -> None:
    """Close stdin, give the server `grace` seconds to exit, then SIGTERM and SIGKILL its group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _exited(process, grace):
        _signal_group(process, signal.SIGTERM)
        if not await _exited(process, EXIT_GRACE):
            _signal_group(process, signal.SIGKILL)
            await _exited(process, EXIT_GRACE)
    _signal_group(process, signal.SIGKILL)  # what it started and left behind
    # anyio's aclose closes the pipes themselves, not only their streams (a pipe left open kept the
    # process's transport alive past the event loop: a server that flooded its stdout), then reaps it
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError), anyio.move_on_after(EXIT_GRACE):
        await process.aclose()


async def _exited(process: Process, limit: float) -> bool:
    with anyio.move_on_after(limit):
        # not process.wait(): asyncio's also waits for the pipes to close, which a grandchild can
        # hold open; the return code is set at the exit itself
        while process.returncode is None:  # noqa: ASYNC110  (see above)
            await anyio.sleep(0.02)
    return process.returncode is not None


def _signal_group(process: Process, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


__all__ = ["Launch", "ProcessInfo", "stdio_transport"]
