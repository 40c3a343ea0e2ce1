"""`treechat --mode rpc`: Pi 0.73.1's RPC protocol (docs/rpc.md) over stdin and stdout.

One command per line in; out go responses (`{"type": "response", "command", "success", "id"?,
"data" | "error"}`), the agent's events as Pi's (`pi_events.py`) and our requests to the client
(approvals: `approvals.py`), each a line. Commands are answered in the order they arrive, except
the long ones (compact, bash, export_html, move_to), which run beside the others and answer when
done. A line that is no command (not UTF-8, not JSON, no known `type`, a field missing or of the
wrong kind, longer than the line limit) is answered with `success: false` and the error, and the
next line is read as usual. stdin's end (or stdout's) ends the server: a run still going is
stopped, open questions are refused.
"""

from __future__ import annotations

import asyncio
import json
import signal as signals
import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

from treechat.agent.types import Json, JsonObject
from treechat.chat import Chat, ChatError
from treechat.chat.events import ChatEvent, Failed, Notice
from treechat.storage.base import StorageError
from treechat.text.sanitize import visible_line

from ..framing import MAX_LINE_BYTES, Framer, Line, LineSink, Overlong
from ..json_mode import tell_events
from ..pi_events import PiEvents
from .approvals import APPROVAL_TIMEOUT, Approvals, install
from .commands import Command, CommandError, RequestId, UiResponse, parse
from .handlers import NO_DATA, Handlers, Reply, RpcError

BACKGROUND = frozenset({"compact", "bash", "export_html", "move_to"})  # may take long: answered when done
_STOP_SIGNALS = (signals.SIGINT, signals.SIGTERM, signals.SIGHUP)


def response(request_id: RequestId, command: str, reply: Reply) -> JsonObject:
    out: JsonObject = {"type": "response", "command": command, "success": True}
    if request_id is not None:
        out["id"] = request_id
    if reply is not NO_DATA:
        out["data"] = reply
    return out


def failure(request_id: RequestId, command: str, error: str) -> JsonObject:
    out: JsonObject = {"type": "response", "command": command, "success": False, "error": error}
    if request_id is not None:
        out["id"] = request_id
    return out


class RpcServer:
    def __init__(self, chat: Chat, out: LineSink | None = None, *, approval_timeout: float = APPROVAL_TIMEOUT,
                 line_limit: int = MAX_LINE_BYTES, err: TextIO | None = None) -> None:
        self.chat = chat
        self.out: LineSink | None = out
        self.line_limit = line_limit
        self.err = err  # a text stream for the notes on stderr (None: sys.stderr)
        self.approvals = Approvals(self, approval_timeout)
        self.events = PiEvents(chat.current_model)
        self.handlers = Handlers(chat, self, self.events)
        self._stop: asyncio.Event | None = None
        self._stop_asked = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def send(self, record: JsonObject) -> None:
        """A record to the client (the server is the approvals' and handlers' sink)."""
        assert self.out is not None, "RpcServer.out is set before serving"
        await self.out.send(record)

    def stop(self) -> None:
        """End serving (stdout went away, a signal): like the end of stdin."""
        self._stop_asked = True
        if self._stop is not None:
            self._stop.set()

    # ------------------------------------------------------------ the loop

    async def serve(self, read: Callable[[], Awaitable[bytes]]) -> None:
        """Until `read()` gives b"" (stdin's end) or `stop()`."""
        self._stop = asyncio.Event()
        if self._stop_asked:
            self._stop.set()
        untell = tell_events(self.chat, self, self.events, self.handlers.apply)
        unlisten = self.chat.subscribe(self._on_chat)
        installed = self._install_signals()
        framer = Framer(self.line_limit)
        try:
            while (chunk := await self._next(read)) is not None:
                for line in framer.feed(chunk) if chunk else framer.end():
                    await self.handle(line)
                if not chunk:
                    break
        finally:
            for sig in installed:
                asyncio.get_running_loop().remove_signal_handler(sig)
            await self._shutdown()
            unlisten()
            untell()

    async def _next(self, read: Callable[[], Awaitable[bytes]]) -> bytes | None:
        assert self._stop is not None
        if self._stop.is_set():
            return None
        reading = asyncio.ensure_future(read())
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if reading.done():
            return reading.result()
        reading.cancel()
        return None

    def _install_signals(self) -> list[signals.Signals]:
        loop = asyncio.get_running_loop()
        installed: list[signals.Signals] = []
        for sig in _STOP_SIGNALS:
            try:
                loop.add_signal_handler(sig, self.stop)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal here
                pass
        return installed

    async def _shutdown(self) -> None:
        """Stop what is going: the run (its partial reply is kept), a command, a question."""
        self.approvals.refuse_all()
        self.handlers.shell.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.chat.halt()
        await self.handlers.shell.close()

    # ------------------------------------------------------------ one line

    async def handle(self, line: Line) -> None:
        """Answer one line: a command's response (now, or when a long one is done), or an error."""
        try:
            command = self._command(line)
        except CommandError as err:
            await self.send(failure(err.request_id, err.command, str(err)))
            return
        if command is None:
            return
        if isinstance(command, UiResponse):
            self.approvals.answer(command)
            return
        if command.type in BACKGROUND:
            task = asyncio.create_task(self._execute(command))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            await self._execute(command)

    def _command(self, line: Line) -> Command | UiResponse | None:
        if isinstance(line, Overlong):
            raise CommandError(f"Failed to parse command: a line of {line.size:,} bytes or more is over the limit of "
                               f"{self.line_limit:,} bytes; it was skipped")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise CommandError(f"Failed to parse command: not UTF-8 (byte {err.start})") from None
        if not text.strip():
            return None  # a blank line is nothing
        try:
            obj: Json = json.loads(text)
        except (ValueError, RecursionError) as err:
            reason = str(err) if isinstance(err, ValueError) else "nested too deep"
            raise CommandError(f"Failed to parse command: {reason}") from None
        return parse(obj)

    async def _execute(self, command: Command) -> None:
        try:
            reply = await self.handlers.run(command)
        except (RpcError, ChatError, StorageError, ValueError) as err:
            await self.send(failure(command.id, command.type, str(err) or type(err).__name__))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001  the server's boundary: a command that fails answers, the rest goes on
            self._note(f"{command.type} failed: {type(err).__name__}: {err}")
            await self.send(failure(command.id, command.type, f"{type(err).__name__}: {err}"))
        else:
            await self.send(response(command.id, command.type, reply))

    # ------------------------------------------------------------ stderr

    def _on_chat(self, event: ChatEvent) -> None:
        """Warnings and failures the controller tells (not in Pi's stream) go to stderr, a line each."""
        if isinstance(event, Failed):
            self._note(event.text)
        elif isinstance(event, Notice) and event.severity == "warning":
            self._note(event.text)

    def _note(self, text: str) -> None:
        stream = self.err if self.err is not None else sys.stderr
        try:
            stream.write(f"treechat: {visible_line(text)}\n")
            stream.flush()
        except (OSError, ValueError):
            pass


def approvals_for(chat: Chat, server: RpcServer, *, yes: bool) -> None:
    """The chat asks the server's client before bash, edits, reads outside, MCP calls (`--yes`: nobody)."""
    install(chat, server.approvals, yes=yes)
