"""The tool contract: a name, a pydantic model for the arguments, and an async `execute`.

`AgentTool[A]` is generic in its arguments' model `A`: the loop validates a call's JSON
arguments into `A` (`validate`) and hands that to `execute`. `execute` may raise: the loop turns
the exception into an error result the model sees; it must return within `timeout_for(args)`
seconds or stop when `signal` aborts (the loop cancels it shortly after either).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from treechat.llm.abort import AbortSignal
from treechat.llm.types import ToolSpec
from treechat.storage.model import TextContent

from ..types import Json, JsonObject, ToolResult

__all__ = ["AgentTool", "AnyTool", "FunctionTool", "OnUpdate", "ToolArgumentsError", "ToolResult", "text_result",
           "ExecutionMode", "DEFAULT_TOOL_TIMEOUT"]

ExecutionMode = Literal["parallel", "sequential"]
OnUpdate = Callable[[ToolResult], Awaitable[None]]  # a partial result while the tool runs
DEFAULT_TOOL_TIMEOUT = 300.0  # seconds; the agent loop stops a tool that runs longer (a backstop)
A = TypeVar("A", bound=BaseModel)


def text_result(text: str, *, is_error: bool = False, details: Json = None) -> ToolResult:
    return ToolResult([TextContent(text=text)], details, is_error)


class ToolArgumentsError(ValueError):
    """Arguments that do not fit the tool's schema; the text is shown to the model."""


class AgentTool(Generic[A]):
    """Subclass and set `name`, `description`, `Args`; implement `execute`."""

    name: str = ""
    label: str = ""
    description: str = ""
    Args: type[A]
    # an MCP server's tool: offered while its server runs, whatever tool set the path recorded
    kept_on_every_path: bool = False
    execution_mode: ExecutionMode = "parallel"
    # The loop stops (cancels) the tool after this many seconds; None: the tool bounds itself
    # (bash, whose time includes waiting for the user's confirmation).
    timeout: float | None = DEFAULT_TOOL_TIMEOUT

    @property
    def parameters(self) -> JsonObject:
        return self.Args.model_json_schema()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def timeout_for(self, args: A) -> float | None:
        """The limit for one call with these (validated) arguments."""
        return self.timeout

    def prepare_arguments(self, args: JsonObject) -> JsonObject:
        """Hook to repair arguments before validation (e.g. a model that sends a string for a list)."""
        return args

    def validate(self, args: JsonObject) -> A:
        try:
            return self.Args.model_validate(args)
        except ValidationError as err:
            problems = "\n".join(
                f"  - {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
            )
            received = json.dumps(args, indent=2, ensure_ascii=False, default=str)
            raise ToolArgumentsError(
                f'Validation failed for tool "{self.name}":\n{problems}\n\nReceived arguments:\n{received}'
            ) from None

    async def execute(
        self, tool_call_id: str, args: A, signal: AbortSignal | None, on_update: OnUpdate
    ) -> ToolResult:
        raise NotImplementedError


AnyTool = AgentTool[Any]  # a tool of any arguments' model (the loop validates, then hands them back)
ToolFn = Callable[[A, AbortSignal | None, OnUpdate], Awaitable[ToolResult | str]]


class FunctionTool(AgentTool[A]):
    """A tool from a plain async function `fn(args, signal, on_update) -> ToolResult | str`."""

    def __init__(
        self,
        name: str,
        description: str,
        args: type[A],
        fn: ToolFn[A],
        *,
        execution_mode: ExecutionMode = "parallel",
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.name, self.description, self.Args = name, description, args
        self.execution_mode = execution_mode
        self.timeout = timeout
        self._fn = fn

    async def execute(self, tool_call_id: str, args: A, signal: AbortSignal | None, on_update: OnUpdate) -> ToolResult:
        result = await self._fn(args, signal, on_update)
        return text_result(result) if isinstance(result, str) else result


async def answer_unless_stopped(question: Awaitable[bool], signal: AbortSignal | None) -> bool:
    """The user's answer to a tool's question (bash's command, an MCP call), or False as soon as
    the run is stopped: the question is then withdrawn (cancelled), never left on screen."""
    ask = asyncio.ensure_future(question)
    if signal is None:
        return bool(await ask)
    stop = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if ask in done:
        return bool(ask.result())
    ask.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ask
    return False
