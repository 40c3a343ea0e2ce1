"""A server's tool as an `AgentTool` the model can call: `NAME__TOOL`, with the server's schema.

A call is confirmed like bash (the same dialog that typing cannot answer; `--yes` in print mode)
unless the server is trusted (`trust = true`). It waits for its server's timeout at most, from
the moment it was allowed, and Esc stops it at once. Whatever went wrong is one sentence for the
model in an error result: a broken server never stops a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from treechat.agent.tools.base import AgentTool, ToolArgumentsError, ToolResult, answer_unless_stopped, text_result

# (server, tool as the model names it, the arguments as JSON) -> allowed?
ConfirmCall = Callable[[str, str, str], Awaitable[bool]]
NO_CONFIRM = ("Calls to the MCP server {server!r} need confirmation and none is available here; rerun with --yes "
              "(or mark the server trust = true in config.toml).")
SEPARATOR = "__"
MAX_NAME = 64  # what OpenAI accepts for a function name
# Every offered tool goes out with every request: a server that lists 50,000 tools (or one tool
# with a 5 MB schema) must not make each request huge. A server's tools are bounded in count and
# bytes (its description, cut, and its schema as JSON: each, and all of them); so is the sum of
# every server's (McpManager.tools). What is left out is said in /mcp, `treechat mcp` and a notice.
MAX_DESCRIPTION = 2_000  # characters of a tool's description sent to the model
MAX_TOOLS = 100  # a server's tools offered
MAX_TOOL_BYTES = 16_000  # one tool: description and schema, as JSON
MAX_SERVER_BYTES = 100_000  # a server's tools together
MAX_ALL_TOOLS, MAX_ALL_BYTES = 200, 250_000  # every server's together


@dataclass(frozen=True)
class Offered:
    """A server's tools within the bounds: those offered, and what was left out (0: nothing)."""

    tools: list[Any]  # the ToolInfos kept
    left_out: int = 0
    too_large: int = 0  # of those, left out for their own size
    listed: int = 0  # how many the server listed (what was read of them)
    more: bool = False  # it had more pages than were read

    def note(self) -> str | None:
        """The one line that says the bounds were hit (None: every tool is offered)."""
        if not self.left_out:
            return None
        of = f"{self.listed:,}{'+' if self.more else ''}"
        large = f"; {self.too_large:,} of them over {MAX_TOOL_BYTES // 1000} KB each" if self.too_large else ""
        return (f"{len(self.tools)} of its {of} tools are offered to the model (a server's tools are bounded: "
                f"{MAX_TOOLS} tools, {MAX_TOOL_BYTES // 1000} KB each, {MAX_SERVER_BYTES // 1000} KB in all{large})")


def tool_size(info: Any) -> int:
    """What a tool costs every request: its name, its description (as sent: cut) and its schema, in bytes."""
    description = _cut(info.description or "", MAX_DESCRIPTION)
    try:
        schema = json.dumps(info.schema, ensure_ascii=False, separators=(",", ":"), default=str)
    except (ValueError, TypeError, RecursionError):
        return MAX_TOOL_BYTES + 1
    return len(info.name.encode("utf-8", "replace")) + len(description.encode("utf-8", "replace")) + len(
        schema.encode("utf-8", "replace"))


def offered(infos: list[Any], *, listed: int | None = None, more: bool = False) -> Offered:
    """`infos` (a server's ToolInfos, in its order) within MAX_TOOLS, MAX_TOOL_BYTES and MAX_SERVER_BYTES."""
    kept: list[Any] = []
    too_large = 0
    budget = MAX_SERVER_BYTES
    for info in infos:
        if len(kept) >= MAX_TOOLS:
            break
        size = tool_size(info)
        if size > MAX_TOOL_BYTES:
            too_large += 1
        elif size <= budget:
            kept.append(info)
            budget -= size
    total = len(infos) if listed is None else listed
    return Offered(kept, max(total - len(kept), 1 if more else 0), too_large, total, more)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def exposed_name(server: str, tool: str) -> str:
    """`server__tool`, in the characters every provider accepts for a function name."""
    name = f"{server}{SEPARATOR}{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"
    return name[:MAX_NAME]


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


class McpTool(AgentTool):
    Args = _AnyArgs
    execution_mode = "parallel"
    timeout = None  # bounded by the server's timeout, which starts once the call is allowed
    kept_on_every_path = True  # a path's recorded tool set does not narrow it (see AgentSession)

    def __init__(self, server: Any, tool: Any, *, confirm: Callable[[], ConfirmCall | None] = lambda: None) -> None:
        self.server, self.tool = server, tool
        self.name = exposed_name(server.name, tool.name)
        self.label = f"{server.name}: {tool.name}"
        self.description = _cut(tool.description or f"The {tool.name} tool of the MCP server {server.name}.",
                                MAX_DESCRIPTION)
        self.confirm = confirm
        self.size = tool_size(tool)  # bytes it adds to every request (the manager's bound on all tools)
        self._schema = tool.schema if isinstance(tool.schema, dict) and tool.schema else {"type": "object"}

    @property
    def parameters(self) -> dict[str, Any]:
        return self._schema

    def validate(self, args: dict[str, Any]) -> BaseModel:
        if not isinstance(args, dict):
            raise ToolArgumentsError(f'The arguments for tool "{self.name}" must be a JSON object.')
        return _AnyArgs.model_validate(args)  # the server checks them against its own schema

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        arguments = args.model_dump() if isinstance(args, BaseModel) else dict(args)
        spec = self.server.spec
        if not spec.trusted:
            confirm = self.confirm()  # the front end's, as it is now
            if confirm is None:
                return text_result(NO_CONFIRM.format(server=spec.name), is_error=True)
            shown = json.dumps(arguments, ensure_ascii=False, indent=2)
            allowed = await answer_unless_stopped(confirm(spec.name, self.name, shown), signal)
            if not allowed and not (signal is not None and signal.aborted):
                return text_result("The user declined this tool call.", is_error=True)
        if signal is not None and signal.aborted:  # stopped while asked: nobody declined
            return text_result("(the call was cancelled before it started)", is_error=True)
        return await self._call(arguments, signal)

    async def _call(self, arguments: dict[str, Any], signal: Any) -> ToolResult:
        from .results import convert_result
        from .server import Unavailable

        limit = self.server.spec.timeout
        call = asyncio.ensure_future(self.server.call(self.tool.name, arguments, limit))
        stop = asyncio.ensure_future(signal.wait()) if signal is not None else None
        try:
            await asyncio.wait({call, *([stop] if stop else [])}, timeout=limit + 1,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            if stop is not None:
                stop.cancel()
        if not call.done():
            call.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(call, 2)
            if signal is not None and signal.aborted:
                return text_result(f"The call to {self.name} was cancelled.", is_error=True)
            return text_result(_timed_out(self.name, limit), is_error=True)
        try:
            return convert_result(call.result(), self.name)
        except TimeoutError:
            return text_result(_timed_out(self.name, limit), is_error=True)
        except Unavailable as err:
            return text_result(str(err), is_error=True)
        except asyncio.CancelledError:
            return text_result(f"The call to {self.name} was cancelled.", is_error=True)
        except Exception as err:  # noqa: BLE001  a tool: the server refused it, answered nonsense, or its connection broke
            text = " ".join(str(err).split()) or type(err).__name__
            return text_result(f"The MCP server {self.server.name!r} failed the call: {text[:500]}", is_error=True)


def _timed_out(name: str, limit: float) -> str:
    return (f"{name} did not answer within {limit:g} s and was stopped "
            "(a server's timeout = …, or mcp_timeout in config.toml, allows longer).")
