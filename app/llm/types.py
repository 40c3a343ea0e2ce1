"""What crosses the stream-function boundary: the model, the request context, options, events.

`stream_fn(model, context, options, signal)` is an async iterator of `StreamEvent`s. Every event
carries the partial assistant message so far; the last one is `done` or `error` with the final
message. Adapters never raise past the stream: failures become an `error`/`aborted` message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Protocol

from treechat.storage.model import AssistantMessage

from .abort import AbortSignal

Api = Literal["openai", "anthropic"]
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class ModelCost:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True)
class ModelInfo:
    id: str
    provider: str
    api: str = "openai"
    base_url: str = ""
    name: str = ""
    reasoning: bool = False
    context_window: int = 128_000
    max_tokens: int = 16_384
    cost: ModelCost = field(default_factory=ModelCost)
    input: tuple[str, ...] = ("text",)
    known: bool = True  # False when the id is not in the catalog and defaults were used
    compat: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"


UNKNOWN_MODEL = ModelInfo(id="unknown", provider="unknown", api="unknown", context_window=0, known=False)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class LlmContext:
    system_prompt: str
    messages: list[Any]  # user / assistant / toolResult messages only
    tools: list[ToolSpec] = field(default_factory=list)


RetryCallback = Callable[[int, float, str], Awaitable[None] | None]


@dataclass
class StreamOptions:
    api_key: str | None = None
    thinking_level: str = "off"
    max_tokens: int | None = None
    session_id: str | None = None
    on_retry: RetryCallback | None = None  # (attempt, delay seconds, error message)
    retry: Any = None  # a retry.RetryPolicy; None means the default policy
    read_timeout: float = 300.0
    connect_timeout: float = 10.0
    transport: Any = None  # an httpx transport, for tests
    extra: dict[str, Any] = field(default_factory=dict)


EventType = Literal[
    "start",
    "text_delta",
    "thinking_delta",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]


@dataclass(frozen=True)
class StreamEvent:
    type: EventType
    partial: AssistantMessage  # a snapshot; the final message for done/error
    delta: str = ""
    content_index: int | None = None


class StreamFn(Protocol):
    def __call__(
        self, model: ModelInfo, context: LlmContext, options: StreamOptions, signal: AbortSignal | None
    ) -> AsyncIterator[StreamEvent]: ...
