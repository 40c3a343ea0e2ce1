"""The tool contract: a name, a pydantic model for the arguments, and an async `execute`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal

from pydantic import BaseModel, ValidationError

from treechat.llm.abort import AbortSignal
from treechat.llm.types import ToolSpec
from treechat.storage.model import TextContent

ExecutionMode = Literal["parallel", "sequential"]
OnUpdate = Callable[[Any], Awaitable[None]]
DEFAULT_TOOL_TIMEOUT = 300.0  # seconds; the agent loop stops a tool that runs longer (a backstop)


@dataclass
class ToolResult:
    content: list[Any] = field(default_factory=list)
    details: Any = None
    is_error: bool = False
    terminate: bool = False  # ask the loop to stop after this batch (only if every result agrees)


def text_result(text: str, *, is_error: bool = False, details: Any = None) -> ToolResult:
    return ToolResult([TextContent(text=text)], details, is_error)


class ToolArgumentsError(ValueError):
    """Arguments that do not fit the tool's schema; the text is shown to the model."""


class AgentTool:
    """Subclass and set `name`, `description`, `Args`; implement `execute`."""

    name: str = ""
    label: str = ""
    description: str = ""
    Args: type[BaseModel] = BaseModel
    execution_mode: ExecutionMode = "parallel"
    # The loop stops (cancels) the tool after this many seconds; None: the tool bounds itself
    # (bash, whose time includes waiting for the user's confirmation).
    timeout: float | None = DEFAULT_TOOL_TIMEOUT

    @property
    def parameters(self) -> dict[str, Any]:
        return self.Args.model_json_schema()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def timeout_for(self, args: Any) -> float | None:
        """The limit for one call with these (validated) arguments."""
        return self.timeout

    def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """Hook to repair arguments before validation (e.g. a model that sends a string for a list)."""
        return args

    def validate(self, args: dict[str, Any]) -> BaseModel:
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
        self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: OnUpdate
    ) -> ToolResult:
        raise NotImplementedError


class FunctionTool(AgentTool):
    """A tool from a plain async function `fn(args, signal, on_update) -> ToolResult | str`."""

    def __init__(
        self,
        name: str,
        description: str,
        args: type[BaseModel],
        fn: Callable[..., Awaitable[Any]],
        *,
        execution_mode: ExecutionMode = "parallel",
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.name, self.description, self.Args = name, description, args
        self.execution_mode = execution_mode
        self.timeout = timeout
        self._fn = fn

    async def execute(self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: OnUpdate) -> ToolResult:
        result = await self._fn(args, signal, on_update)
        return text_result(result) if isinstance(result, str) else result
