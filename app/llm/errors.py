"""Provider failures, classified so callers know whether to retry, compact, or ask the user."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from treechat import bounded_json

from .local import shown_model_id

if TYPE_CHECKING:
    from treechat.storage.model import ErrorKind  # (stored with a failed reply)

# A timeout is not retried: it already took the whole bound (a dead server would cost it again per try).
RETRYABLE_KINDS = {"rate_limited", "overloaded", "server", "transport"}
REDACTED = "[redacted]"
_MIN_SECRET = 8  # shorter "keys" are placeholders local servers accept (`ollama`); hiding them mangles text
_TOKEN_SHAPES = re.compile(
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization value echoed back
    r"|\b(?:sk|pk|rk|gsk|xai|sk-ant|sk-proj|sk-or)-[A-Za-z0-9_-]{16,}"  # the usual key shapes
)

_OVERFLOW = re.compile(
    "|".join(
        [
            r"prompt is too long",
            r"input is too long for requested model",
            r"exceeds the context window",
            r"input token count.*exceeds the maximum",
            r"maximum prompt length is \d+",
            r"reduce the length of the messages",
            r"maximum context length is \d+ tokens",
            r"exceeds the limit of \d+",
            r"exceeds the available context size",
            r"greater than the context length",
            r"context window exceeds limit",
            r"exceeded model token limit",
            r"too large for model with \d+ maximum context length",
            r"model_context_window_exceeded",
            r"context[_ ]length[_ ]exceeded",
            r"too many tokens",
            r"token limit exceeded",
            r"^4(00|13)\s*(status code)?\s*\(no body\)",
        ]
    ),
    re.IGNORECASE,
)
_RATE_LIMIT_WORDING = re.compile(r"rate.?limit|too many requests", re.IGNORECASE)


def is_context_overflow(message: str | None) -> bool:
    """True when a provider error message says the prompt did not fit the context window."""
    if not message or _RATE_LIMIT_WORDING.search(message):
        return False
    return bool(_OVERFLOW.search(message))


class ProviderError(Exception):
    """One failed provider call. `str()` is one sentence a person can act on."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status
        self.retry_after = retry_after
        self._retryable = retryable

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS if self._retryable is None else self._retryable


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every secret value, Authorization-style token and key-shaped string replaced.

    Applied where provider errors become message text (stored as `errorMessage`, printed, exported):
    servers echo keys in 401 bodies, proxies echo headers."""
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _TOKEN_SHAPES.sub(lambda m: f"{m.group(1)} {REDACTED}" if m.group(1) else REDACTED, text)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_body_message(body: str) -> tuple[str, str | None, str | None]:
    """(message, type, code) from any provider's JSON error body, or the raw text."""
    try:
        data = bounded_json.loads(body)
    except (ValueError, TypeError):
        return body.strip()[:300], None, None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, str):
            return err, None, None
        if isinstance(err, dict):
            msg = str(err.get("message") or err.get("msg") or "").strip()
            return msg or body.strip()[:300], err.get("type"), err.get("code") and str(err.get("code"))
    return body.strip()[:300], None, None


def classify_http_error(
    status: int, headers: Mapping[str, str], body: str, *, provider: str, model: str, base_url: str = ""
) -> ProviderError:
    """Turn a non-2xx response into a ProviderError with an actionable message."""
    detail, etype, code = error_body_message(body)
    where = f"{provider}/{shown_model_id(model)}"
    retry_after = parse_retry_after(headers)
    shown = f": {detail}" if detail else ""
    if is_context_overflow(detail) or code == "context_length_exceeded" or (
        status in (400, 413) and not detail
    ):
        return ProviderError(
            "overflow", f"The conversation is too long for {where}{shown}; compact it or pick a larger model.",
            status=status,
        )
    if code == "insufficient_quota" or etype == "billing_error" or status == 402:
        return ProviderError(
            "billing", f"{provider} refused the request for lack of quota or credit{shown}; check your plan and billing.",
            status=status,
        )
    if status in (401, 403):
        return ProviderError(
            "auth",
            f"{provider} rejected the API key (HTTP {status}){shown}; check the key in the environment or config.toml.",
            status=status,
        )
    if status == 404:
        hint = f"`ollama pull {model}`" if ":11434" in base_url else "check the model id and the base URL"
        return ProviderError("not_found", f"Model {where} was not found (HTTP 404){shown}; {hint}.", status=status)
    if status == 429:
        return ProviderError(
            "rate_limited", f"{provider} is rate limiting requests (HTTP 429){shown}; wait and try again.",
            status=status, retry_after=retry_after,
        )
    if status == 529 or etype == "overloaded_error":
        return ProviderError(
            "overloaded", f"{provider} is overloaded (HTTP {status}){shown}; try again shortly.",
            status=status, retry_after=retry_after,
        )
    if status >= 500 or status in (408, 409):
        return ProviderError(
            "server", f"{provider} had a server error (HTTP {status}){shown}; try again shortly.",
            status=status, retry_after=retry_after,
        )
    return ProviderError("bad_request", f"{provider} rejected the request (HTTP {status}){shown}.", status=status)


def classify_stream_error(payload: object, *, provider: str) -> ProviderError:
    """An error that arrived inside a 200 stream (an SSE `error` event or an `{"error":…}` chunk)."""
    msg, etype, code = error_body_message(json.dumps(payload)) if not isinstance(payload, str) else (payload, None, None)
    if is_context_overflow(msg) or code == "context_length_exceeded":
        return ProviderError("overflow", f"The conversation is too long for the model: {msg}")
    if etype == "overloaded_error":
        return ProviderError("overloaded", f"{provider} is overloaded: {msg}")
    return ProviderError("server", f"{provider} reported an error mid-stream: {msg}")


# ---------------------------------------------------------------- the limit an overflow states
# Kept apart from the classification above: the compactor reads the numbers out of the error
# text, whichever layer produced it, to plan a compaction that fits the real window.

_N = r"(\d[\d,_]*)"
# (pattern, group of the window, group of the prompt size or 0) — provider wordings, newest first
_LIMIT_PATTERNS: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), w, r)
    for p, w, r in (
        # Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
        (rf"prompt is too long:\s*{_N}\s*tokens?\s*>\s*{_N}", 2, 1),
        # llama-cpp-python, vLLM: "…you requested 2631 tokens (2531 in the messages, 100 in the
        # completion)": the prompt is the messages' part
        (rf"maximum context length is {_N} tokens?.*?\({_N} in the messages", 1, 2),
        # OpenAI, OpenRouter, vLLM: "maximum context length is 8192 tokens. However, your messages
        # resulted in 9000 tokens" / "…you requested 9000 tokens" / "…your request has 9000 input tokens"
        (rf"maximum context length is {_N} tokens?(?:.*?(?:resulted in|requested(?: about)?|request has|contains)\s*{_N})?", 1, 2),
        # llama.cpp: "request (9000 tokens) exceeds the available context size (8192 tokens)"
        (rf"request \({_N} tokens?\) exceeds the available context size \({_N}", 2, 1),
        (rf"exceeds the available context size \({_N}", 1, 0),
        # LM Studio: "…the model is loaded with context length of only 8192 tokens"
        (rf"context length of (?:only )?{_N}", 1, 0),
        # Gemini: "The input token count (9000) exceeds the maximum number of tokens allowed (8192)"
        (rf"input token count \({_N}\) exceeds the maximum number of tokens allowed \({_N}", 2, 1),
        # xAI: "maximum prompt length is 131072 but the request contains 150000 tokens"
        (rf"maximum prompt length is {_N}(?:.*?contains {_N})?", 1, 2),
        # Mistral: "too large for model with 32768 maximum context length"
        (rf"too large for model with {_N} maximum context length", 1, 0),
        # Copilot and others: "exceeds the limit of 128000"
        (rf"exceeds the limit of {_N}", 1, 0),
        # generic: "context window of 8192 tokens", "context length is 8192"
        (rf"context (?:window|length|size) (?:of|is) {_N}", 1, 0),
    )
)


@dataclass(frozen=True)
class StatedLimit:
    """What an overflow error says: the window in tokens and, when stated, the prompt's size."""

    window: int
    requested: int | None = None


def _int(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(text.replace(",", "").replace("_", ""))
    except ValueError:
        return None


def stated_context_limit(message: str | None) -> StatedLimit | None:
    """The context window an overflow error states ("maximum context length is 8192 tokens",
    "prompt is too long: 213462 tokens > 200000 maximum", …), or None when it names no number."""
    if not message:
        return None
    for pattern, window_group, requested_group in _LIMIT_PATTERNS:
        found = pattern.search(message)
        if found is None:
            continue
        window = _int(found.group(window_group))
        if window is None or window <= 0:
            continue
        requested = _int(found.group(requested_group)) if requested_group else None
        return StatedLimit(window, requested if requested and requested > 0 else None)
    return None


def proxy_http_error(status: int, body: str, *, proxy: str, source: str, provider: str) -> ProviderError | None:
    """A 407/502/503/504 that came back through a proxy: name the proxy (it may be its own answer)."""
    if status not in (407, 502, 503, 504):
        return None
    detail, etype, code = error_body_message(body)
    if status != 407 and (etype or code or _is_json_error(body)):
        return None  # the provider's own JSON error, passed along by the proxy: classify it as such
    shown = f": {detail[:200]}" if detail and not detail.lstrip().startswith("<") else ""
    if status == 407:
        return ProviderError(
            "transport", f"The proxy {proxy} (from {source}) wants credentials (HTTP 407){shown}; "
            f"put them in {source} or add the host to NO_PROXY.", status=status, retryable=False,
        )
    return ProviderError(
        "transport", f"HTTP {status} from the proxy {proxy} (from {source}) on the way to {provider}{shown}; "
        f"check the proxy, or add the host to NO_PROXY.", status=status,
    )


def _is_json_error(body: str) -> bool:
    try:
        data = bounded_json.loads(body)
    except (ValueError, TypeError):
        return False
    return isinstance(data, dict) and ("error" in data or data.get("object") == "error")


def not_event_stream(content_type: str, head: bytes, *, provider: str, base_url: str) -> ProviderError:
    """A 2xx answer that is not SSE (an HTML page, a JSON document): almost always a wrong base URL."""
    got = content_type.split(";", 1)[0].strip() or "no content type"
    detail = ""
    if got == "application/json" or head.lstrip().startswith(b"{"):
        message, _, _ = error_body_message(head.decode("utf-8", "replace"))
        if message and not message.lstrip().startswith("{"):
            detail = f" ({message[:200]})"
    return ProviderError(
        "protocol", f"{provider} at {base_url} answered with something that is not an event stream "
        f"(got {got}){detail}: check the base URL.", retryable=False,
    )


def malformed(provider: str, what: str, value: object) -> ProviderError:
    """A chunk whose field has the wrong kind of value (`"content": 5`): one sentence naming the
    field, never Python's own words about it (issue 21)."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:39] + "…"
    return ProviderError("protocol", f"{provider} sent a malformed chunk ({what} is {type(value).__name__} {shown}, "
                         "not text); the reply is incomplete.", retryable=False)


def text_of(value: object, *, provider: str, what: str) -> str:
    """A field that must be text: "" when absent, the text, or `malformed`."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise malformed(provider, what, value)
