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
from typing import Any

from pydantic import BaseModel, ConfigDict

from treechat.agent.tools.base import AgentTool, ToolArgumentsError, ToolResult, answer_unless_stopped, text_result

# (server, tool as the model names it, the arguments as JSON) -> allowed?
ConfirmCall = Callable[[str, str, str], Awaitable[bool]]
NO_CONFIRM = ("Calls to the MCP server {server!r} need confirmation and none is available here; rerun with --yes "
              "(or mark the server trust = true in config.toml).")
SEPARATOR = "__"
MAX_NAME = 64  # what OpenAI accepts for a function name


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
        self.description = tool.description or f"The {tool.name} tool of the MCP server {server.name}."
        self.confirm = confirm
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
            if not await answer_unless_stopped(confirm(spec.name, self.name, shown), signal):
                return text_result("The user declined this tool call.", is_error=True)
        if signal is not None and signal.aborted:
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
