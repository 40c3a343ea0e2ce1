"""A client of Pi's RPC protocol for the tests, written like Pi's own RpcClient (rpc-client.ts):
commands with ids, responses matched by id, everything else an event, lines split on LF only.

It talks over a `Channel`: a real process's pipes (`ProcessChannel`: `treechat --mode rpc`, or
`pi --mode rpc` when recording), or an in-process `RpcServer` (`ServerChannel`), which is faster
and lets a test look inside."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Protocol

from treechat.agent.types import JsonObject
from treechat.protocols.framing import json_line
from treechat.protocols.rpc.server import RpcServer

WAIT = 30.0  # seconds any one wait may take before the test fails (a bound, never a pause)


class Channel(Protocol):
    async def write(self, data: bytes) -> None: ...
    async def read_line(self) -> bytes | None: ...  # one line without its LF; None at the end
    async def close(self) -> None: ...


class Driver:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.records: list[dict[str, Any]] = []
        self.raw: list[bytes] = []  # the lines as they came
        self.gates: list[asyncio.Event] = []  # set on close: a fake reply held by a plan never hangs
        self._new = asyncio.Event()
        self._ended = False
        self._ids = 0
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while (line := await self.channel.read_line()) is not None:
            self.raw.append(line)
            self.records.append(json.loads(line))  # every line must be JSON: stdout carries nothing else
            self._new.set()
        self._ended = True
        self._new.set()

    async def send(self, command: dict[str, Any]) -> None:
        await self.channel.write(json.dumps(command).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        await self.channel.write(data)

    async def wait(self, pred: Any, after: int = 0) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while True:
                for record in self.records[after:]:
                    if pred(record):
                        return record
                if self._ended:
                    raise AssertionError(f"the server ended without it; got {self.records[after:]}")
                self._new.clear()
                await self._new.wait()

    async def call(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send with a fresh id; the response to it."""
        self._ids += 1
        rid = f"req_{self._ids}"
        await self.send({**command, "id": rid})
        return await self.wait(lambda r: r.get("type") == "response" and r.get("id") == rid)

    async def call_unknown(self, kind: str) -> dict[str, Any]:
        """An unknown command (Pi's answer carries no id: matched by its command)."""
        start = len(self.records)
        await self.send({"type": kind, "id": "unknown"})
        return await self.wait(lambda r: r.get("type") == "response" and r.get("command") == kind, start)

    async def until(self, kind: str, count: int = 1) -> None:
        """Until `count` records of this kind have come."""
        async with asyncio.timeout(WAIT):
            while sum(1 for r in self.records if r.get("type") == kind) < count:
                if self._ended:
                    raise AssertionError(f"the server ended before {count} {kind}")
                self._new.clear()
                await self._new.wait()

    async def until_idle(self) -> None:
        await self.until("agent_end")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == kind]

    async def close(self) -> None:
        """End stdin (the server ends) and read what is left."""
        for gate in self.gates:
            gate.set()
        await self.channel.close()
        async with asyncio.timeout(WAIT):
            await self._reader


class ProcessChannel:
    """A child process's stdin and stdout (stderr kept)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.stderr = b""

    @classmethod
    async def start(cls, argv: Sequence[str], *, cwd: str, env: dict[str, str]) -> ProcessChannel:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    limit=64 * 1024 * 1024)
        return cls(proc)

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read_line(self) -> bytes | None:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()  # (asyncio splits on b"\n" only)
        return line[:-1] if line.endswith(b"\n") else (line or None)

    async def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        async with asyncio.timeout(WAIT):
            self.stderr = await self.proc.stderr.read()
            await self.proc.wait()


class ListLines:
    """The server's records, as the bytes a client would read (through `json_line`)."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.records: list[JsonObject] = []

    async def send(self, record: JsonObject) -> None:
        self.records.append(record)
        await self.lines.put(json_line(record)[:-1])


class ServerChannel:
    """An in-process RpcServer serving what is written (the test's stdin); its chat is closed
    with it, as the CLI closes it."""

    def __init__(self, server: RpcServer) -> None:
        self.server = server
        self.sink = ListLines()
        server.out = self.sink
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.serving = asyncio.ensure_future(self._serve())

    async def _serve(self) -> None:
        try:
            await self.server.serve(self.chunks.get)
        finally:
            await self.sink.lines.put(None)

    async def write(self, data: bytes) -> None:
        await self.chunks.put(data)

    async def read_line(self) -> bytes | None:
        return await self.sink.lines.get()

    async def close(self) -> None:
        await self.chunks.put(b"")
        async with asyncio.timeout(WAIT):
            await self.serving
            await self.server.chat.close()
