"""One MCP server: its connection (on the SDK's `Client`), its tools, its calls, its restarts.

A server lives in one task (`run`): connect, list the tools, then wait until it is stopped or its
connection is lost. Starting is bounded by `startup_timeout`; a call by its timeout (and the
run's stop signal); an answer by `max_message` bytes and `bounds.MAX_ITEMS` objects (the
transports); what it sends unasked by `bounds.Gate`'s rates, and a flood of `tools/list_changed`
is one listing at a time, RELIST_GAP apart (each listing rebuilds the tools offered). A server that stops after
it was ready is restarted once; when that fails, or it stops again, it stays stopped and says why
in one line. A server that cannot start at all is not retried (a missing program or a wrong URL
does not fix itself): `restart()` tries again on request.

This module imports the SDK; the manager loads it on a thread, after the first frame.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp import Client
from mcp.client import Transport
from mcp.shared.exceptions import MCPError

from treechat import __version__
from treechat.bounded_json import RawObject
from treechat.storage.json_types import JsonObject

from .bounds import Gate, GateCounts
from .config import MissingVariable, ServerSpec, expand
from .stdio import Launch, ProcessInfo, stdio_transport

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams  # (the SDK names it there only)
    from mcp.client.session import IncomingMessage

State = Literal["starting", "ready", "failed", "stopped"]
MAX_MESSAGE = 16_000_000  # bytes of one message from a server (an image result is up to ~7 MB of base64)
MAX_PAGES = 50  # pages of tools/list read at most
RELIST_GAP = 1.0  # seconds between two listings of a server's tools asked for by list_changed
TOOLS_READ = 1_000  # tools read of a listing at most (a hundred are offered: tools.MAX_TOOLS); no page after that
# The environment a program gets, besides its own `env`: what finding programs and files needs,
# never the API keys and tokens the rest of the environment may hold.
INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


class Unavailable(Exception):
    """A call to a server that is not running; the text is one sentence for the model."""


@dataclass(frozen=True)
class ToolInfo:
    name: str  # the server's name for it
    description: str
    schema: RawObject  # its inputSchema, as the server sent it


class McpServer:
    def __init__(self, spec: ServerSpec, *, cwd: str, env: dict[str, str] | None = None,
                 on_change: Callable[[McpServer, str], None] = lambda server, what: None,
                 max_message: int = MAX_MESSAGE) -> None:
        self.spec = spec
        self.name = spec.name
        self.cwd = cwd
        self.env = dict(os.environ if env is None else env)
        self.on_change = on_change
        self.max_message = max_message
        self.state: State = "starting"
        self.tools: list[ToolInfo] = []
        self.tools_unread = False  # its listing went on past TOOLS_READ or MAX_PAGES: not read
        self.error: str | None = None
        self.restarted = 0
        self.counts = GateCounts()  # what it sent and what of it was dropped (bounds.Gate)
        self.relists = 0  # listings of its tools after list_changed
        self._relist_wanted = False
        self._relister: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._settled = asyncio.Event()  # set whenever it is not "starting"
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ life

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._stop.clear()
            self._set("starting")
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def restart(self) -> None:
        await self.stop()
        self.restarted, self.error = 0, None
        self.start()

    async def stop(self) -> None:
        self._stop.set()
        relister = self._relister
        if relister is not None and not relister.done():
            relister.cancel()
            await asyncio.gather(relister, return_exceptions=True)
        task = self._task
        if task is not None and not task.done():
            if self.state == "starting":
                task.cancel()  # still starting: not waited for until its startup timeout (a -p that is done)
            await asyncio.gather(task, return_exceptions=True)
        if self.state != "failed":
            self._set("stopped")

    async def settled(self, limit: float | None = None) -> bool:
        """Wait until it is ready or has failed (at most `limit` seconds); True when ready."""
        if self.state == "starting":
            try:
                await asyncio.wait_for(self._settled.wait(), limit)
            except TimeoutError:
                pass
        return self.state == "ready"

    def _set(self, state: State, what: str | None = None) -> None:
        self.state = state
        if state == "starting":
            self._settled.clear()
        else:
            self._settled.set()
        self.on_change(self, what or state)

    async def _run(self) -> None:
        outcome, why = await self._session()
        while outcome == "lost" and not self._stop.is_set():
            if self.restarted >= 1:
                self.tools, self.error = [], why
                self._set("failed", "lost again")
                return
            self.restarted += 1
            self.error = why
            self._set("starting", "restarting")
            outcome, why = await self._session()
        if outcome == "failed":
            self.tools, self.error = [], why
            self._set("failed", "failed" if not self.restarted else "restart failed")
        elif self.state != "failed":
            self._set("stopped")

    async def _session(self) -> tuple[Literal["stopped", "lost", "failed"], str | None]:
        """One connection, from start until it is stopped or lost."""
        self._lost.clear()
        info = ProcessInfo(on_end=self._lost.set)
        ready = False
        try:
            transport = self._transport(info)
            with anyio.fail_after(self.spec.startup_timeout) as scope:
                client = Client(transport, mode="auto", read_timeout_seconds=self.spec.startup_timeout,
                                client_info=types.Implementation(name="treechat", version=__version__),
                                message_handler=self._on_message, cache=None)
                async with client:
                    self.tools, self.tools_unread = await _list_tools(client)
                    scope.deadline = math.inf  # started: from here a call bounds itself
                    self._client, ready, info.graceful = client, True, True
                    self._set("ready")
                    await _first(self._stop.wait(), self._lost.wait())
                    self._client = None
        except MissingVariable as err:
            return "failed", str(err)
        except TimeoutError:
            if ready:
                return "lost", _ended(info) or "stopped answering"
            return "failed", f"did not start within {self.spec.startup_timeout:g} s" + _words(info)
        except OSError as err:
            if self.spec.config.kind == "stdio":
                return "failed", _spawn_error(err, self.spec.config.command or "")
            return "failed", f"cannot reach it: {err.strerror or err}"
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # noqa: BLE001 - the SDK's errors, grouped by anyio: the first leaf says it
            if isinstance(err, (KeyboardInterrupt, SystemExit)):
                raise
            self._client = None
            leaf = _leaf(err)  # an error answer (the server's, or ours for an answer too large) says it; else its end
            answered = isinstance(leaf, MCPError) and leaf.code != types.CONNECTION_CLOSED
            reason = _ended(info) if info.ended and not answered else None
            text = reason or _describe(err)
            return ("lost", text) if ready else ("failed", text + ("" if reason else _words(info)))
        finally:
            self._client = None
        if self._stop.is_set():
            return "stopped", None
        return "lost", _ended(info) or "its connection closed"

    def _transport(self, info: ProcessInfo) -> Transport:
        return _gated(self._bare_transport(info), self.counts)

    def _bare_transport(self, info: ProcessInfo) -> Transport:
        c = self.spec.config
        if c.kind == "http":
            from .http import http_transport

            headers = {k: expand(v, self.env, f"header {k}") for k, v in c.headers.items()}
            return http_transport(expand(str(c.url), self.env, "url"), headers, max_message=self.max_message)
        env = {k: self.env[k] for k in INHERITED if k in self.env}
        env.update({k: expand(v, self.env, f"env {k}") for k, v in c.env.items()})
        cwd = os.path.join(self.cwd, expand(c.cwd, self.env, "cwd")) if c.cwd else self.cwd
        if not os.path.isdir(cwd):
            raise MissingVariable(f"its folder {cwd} does not exist (cwd = …)")
        launch = Launch(expand(c.command or "", self.env, "command"),
                        [expand(a, self.env, "an argument") for a in c.args], env, cwd)
        return stdio_transport(launch, info, max_message=self.max_message)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self._client is not None:
            self._relist_wanted = True  # however many come, one listing runs at a time, RELIST_GAP apart
            if self._relister is None or self._relister.done():
                self._relister = asyncio.get_running_loop().create_task(self._relist_while_wanted())
        await anyio.lowlevel.checkpoint()

    async def _relist_while_wanted(self) -> None:
        while self._relist_wanted and self._client is not None:
            self._relist_wanted = False
            await self._relist()
            await asyncio.sleep(RELIST_GAP)  # a rate, not a wait for something: the next ask waits its turn

    async def _relist(self) -> None:
        client = self._client
        if client is None:
            return
        self.relists += 1
        try:
            with anyio.fail_after(self.spec.startup_timeout):
                self.tools, self.tools_unread = await _list_tools(client)
        except Exception:  # noqa: BLE001 - the old list stays; a broken listing is not worth a crash
            return
        self.on_change(self, "tools")

    # ------------------------------------------------------------ calls

    async def call(self, tool: str, arguments: JsonObject, timeout: float) -> types.CallToolResult:  # noqa: ASYNC109  also the SDK's read timeout (its own REQUEST_TIMEOUT answer)
        """The server's CallToolResult. Raises Unavailable (not running), TimeoutError, or the
        SDK's MCPError (the server refused the call)."""
        if self.state == "starting":
            await self.settled(timeout)
        client = self._client
        if self.state != "ready" or client is None:
            raise Unavailable(f"MCP server {self.name!r} is not running ({self.error or self.state}).")
        try:
            with anyio.fail_after(timeout):
                return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as err:
            if err.code == types.REQUEST_TIMEOUT:
                raise TimeoutError from None
            if err.code == types.CONNECTION_CLOSED:
                self._lost.set()
                raise Unavailable(f"MCP server {self.name!r} stopped during the call; it is being restarted.") from None
            raise


async def _list_tools(client: Client) -> tuple[list[ToolInfo], bool]:
    """(the tools listed, up to TOOLS_READ; whether the listing went on past what was read)."""
    if client.server_capabilities.tools is None:
        return [], False
    found: list[ToolInfo] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        found.extend(ToolInfo(t.name, t.description or t.title or "", dict(t.input_schema))
                     for t in page.tools[: TOOLS_READ + 1 - len(found)])
        cursor = page.next_cursor
        if not cursor or len(found) > TOOLS_READ:
            break
    return found[:TOOLS_READ], bool(cursor) or len(found) > TOOLS_READ


@asynccontextmanager
async def _gated(transport: Transport, counts: GateCounts) -> AsyncIterator[TransportStreams]:
    """The transport with its read side behind a Gate (bounds.py): the rates of what a server sends."""
    async with transport as (read, write):
        yield Gate(read, counts), write


async def _first(*waits: Awaitable[object]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _leaf(err: BaseException) -> BaseException:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def _describe(err: BaseException) -> str:
    leaf = _leaf(err)
    if isinstance(leaf, MCPError) and leaf.code == types.CONNECTION_CLOSED:
        return "closed the connection before it answered"
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    text = " ".join(str(leaf).split()) or type(leaf).__name__
    return text[:300]


def _ended(info: ProcessInfo) -> str | None:
    if not info.ended:
        return None
    status = info.exit_status
    how = f"exited with status {status}" if status is not None and status >= 0 else (
        f"was killed by signal {-status}" if status is not None else "closed its output")
    return how + _words(info)


def _words(info: ProcessInfo) -> str:
    words = info.last_words()
    return f" (it said: {words})" if words else ""


def _spawn_error(err: OSError, command: str) -> str:
    if isinstance(err, FileNotFoundError):
        return f"cannot start {command!r}: no such program (is it installed and on PATH?)"
    if isinstance(err, PermissionError):
        return f"cannot start {command!r}: permission denied"
    return f"cannot start {command!r}: {err.strerror or err}"
