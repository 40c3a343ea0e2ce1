"""What crosses the stream-function boundary: the model, the request context, options, events.

`stream_fn(model, context, options, signal)` is an async iterator of `StreamEvent`s. Every event
carries the partial assistant message so far; the last one is `done` or `error` with the final
message. Adapters never raise past the stream: failures become an `error`/`aborted` message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypedDict

from treechat.storage.json_types import JsonObject
from treechat.storage.model import AssistantMessage, ToolResultMessage, UserMessage

from .abort import AbortSignal
from .apis import Api as Api  # (apart: config.toml's checks name it without loading this)

if TYPE_CHECKING:
    import httpx

    from .retry import RetryPolicy

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class ModelCost:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


MaxTokensField = Literal["max_tokens", "max_completion_tokens"]


@dataclass(frozen=True)
class Compat:
    """What a provider's or a model's server takes beyond the common wire format: models.json's
    `compat` tables, by these names (a model's over its provider's; `catalog.compat_of` checks
    them: an unknown name or a value of the wrong kind is an error naming the table)."""

    # Chat Completions: the field a reply's limit goes in (OpenAI's own host: max_completion_tokens)
    max_tokens_field: MaxTokensField = "max_tokens"
    supports_usage_in_streaming: bool = True  # Chat Completions: stream_options.include_usage
    supports_reasoning_effort: bool = True  # Chat Completions: reasoning_effort
    supports_minimal: bool = True  # the "minimal" thinking level (else it asks for "low": codex refuses it)
    supports_xhigh: bool = False  # the "xhigh" thinking level (else "high")
    adaptive_thinking: bool = False  # Anthropic: thinking {type: adaptive} with an effort, not a budget


@dataclass(frozen=True)
class ModelInfo:
    id: str
    provider: str
    api: Api | Literal["unknown"] = "openai"  # "unknown": only UNKNOWN_MODEL, which no request goes to
    base_url: str = ""
    name: str = ""
    reasoning: bool = False
    context_window: int = 128_000
    max_tokens: int = 16_384
    cost: ModelCost = field(default_factory=ModelCost)
    input: tuple[str, ...] = ("text",)
    known: bool = True  # False when the id is not in the catalog and defaults were used
    compat: Compat = Compat()
    local: bool = False  # served on this machine or LAN (the provider is marked local): never via a proxy
    # False: nobody said how large the window is (a local server without /props, nothing in
    # config.toml): context_window is a conservative guess and the status shows "ctx ?"
    window_known: bool = True
    # max_tokens is a limit someone set (config.toml, or sized to a server's window): requests
    # carry it. Otherwise the server's own default applies (a catalog figure can be an artefact).
    send_max_tokens: bool = False

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"


UNKNOWN_MODEL = ModelInfo(id="unknown", provider="unknown", api="unknown", context_window=0, known=False)


def stored_model_ref(model: dict[str, str] | None) -> str | None:
    """"provider/id" of the model a path says it used ({"provider", "modelId"}: a model change or
    the last reply), None when it names none. A reply saved when no model was chosen (a failed
    send, or a tool-only turn of a test session) has "" for both; reopening its session must not
    read that as the model "/" and greet the user with an error about a ref they never typed."""
    if not model:
        return None
    provider, model_id = model.get("provider") or "", model.get("modelId") or ""
    return f"{provider}/{model_id}" if provider and model_id else None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: JsonObject


# The only roles a provider is sent (agent messages of other roles are converted or dropped first).
LlmMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


@dataclass
class LlmContext:
    system_prompt: str
    messages: list[LlmMessage]
    tools: list[ToolSpec] = field(default_factory=list)


RetryCallback = Callable[[int, float, str], Awaitable[None] | None]
WaitKind = Literal["retry", "first_byte", "idle"]


@dataclass(frozen=True)
class WaitNotice:
    """A wait a person should see (a countdown), announced when it starts.

    kind "retry": the request failed before its first byte and is sent again in `seconds`;
    `attempt` of `max_attempts` retries, `reason` the failure's sentence, `retry_after` True when
    the server named the delay. kind "first_byte" / "idle": the provider has been silent for
    `waited` seconds (before its first token / between tokens); the request fails when the
    silence reaches `seconds`. `started_at` is `time.monotonic()` when the wait began."""

    kind: WaitKind
    seconds: float
    started_at: float
    waited: float = 0.0
    attempt: int = 0
    max_attempts: int = 0
    reason: str = ""
    retry_after: bool = False
    provider: str = ""


WaitCallback = Callable[[WaitNotice], Awaitable[None] | None]

# Defaults of the three waits (seconds); config.toml's keys of the same names override them
# (treechat.llm.options.stream_options_from_settings). Why these values: see app/config/settings.py.
CONNECT_TIMEOUT = 10.0
FIRST_BYTE_TIMEOUT = 300.0
IDLE_TIMEOUT = 120.0
NOTICE_AFTER = 5.0  # a silence longer than this is announced (WaitNotice) so a front end can show it
MAX_REPLY_MB = 4.0  # text of one reply (text, thinking, tool arguments): ~7x the longest a model may write (128k tokens)
REPLY_TIMEOUT = 3600.0  # seconds for one whole request, from sending to its last byte


@dataclass
class StreamOptions:
    api_key: str | None = None
    thinking_level: str = "off"
    max_tokens: int | None = None
    session_id: str | None = None
    on_retry: RetryCallback | None = None  # (attempt, delay seconds, error message)
    on_wait: WaitCallback | None = None  # retries and silences longer than `notice_after`
    retry: RetryPolicy | None = None  # None: the default policy
    connect_timeout: float = CONNECT_TIMEOUT  # TCP (and TLS) connect, per attempt
    # From sending the request to the first token (text, thinking or a tool call): headers, SSE
    # comments, pings and empty chunks do not end it. A local model may read a long prompt for minutes.
    first_byte_timeout: float = FIRST_BYTE_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT  # between tokens once the reply streams; keep-alives do not count
    notice_after: float = NOTICE_AFTER
    # bounds on what a server can make us hold and wait for: a reply past them stops, keeping its text
    max_reply_bytes: int = int(MAX_REPLY_MB * 1e6)
    reply_timeout: float = REPLY_TIMEOUT
    transport: httpx.AsyncBaseTransport | None = None  # for tests


class StreamOptionFields(TypedDict, total=False):
    """The `StreamOptions` fields a caller may preset for every request of a run
    (`Agent(stream_options=...)`, `stream_options_from_settings`)."""

    session_id: str | None
    on_retry: RetryCallback | None
    on_wait: WaitCallback | None
    retry: RetryPolicy | None
    connect_timeout: float
    first_byte_timeout: float
    idle_timeout: float
    notice_after: float
    max_reply_bytes: int
    reply_timeout: float
    transport: httpx.AsyncBaseTransport | None


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
