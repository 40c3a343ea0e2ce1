"""The shared HTTP/SSE streaming runner both adapters plug a protocol parser into.

The HTTP work runs in a producer task that feeds a queue; abort puts a sentinel into the same
queue, so the consumer wakes at once, cancels the producer (closing the request) and finishes
with an `aborted` message that keeps the partial content.

Every wait is bounded and visible (issue 15): connecting by `connect_timeout`; the silence before
the first token by `first_byte_timeout` and between tokens by `idle_timeout`, where only tokens
count (SSE comments, pings and empty chunks do not: a server could send them forever). A silence
longer than `notice_after` and every retry wait are announced through `options.on_wait`.
Error text is built here, once, and every secret the request carried is redacted from it.

Every read is bounded in bytes too (issue 21): an error's body is read up to ERROR_BODY_BYTES
within ERROR_BODY_SECONDS; one SSE event, and the text of the whole reply (text, thinking and
tool-call arguments), up to `max_reply_bytes`; the whole request, retries included, takes at most
`reply_timeout`. A reply stopped by a bound keeps what arrived and says which bound and its key.
Streamed text is kept as pieces and joined once per network read (`Pieces`), and listeners get
one snapshot per read: joining per delta made a 13 MB reply cost 200 s and 2.8 GB.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import httpx

from treechat.storage.model import AssistantMessage
from treechat.storage.well_formed import well_formed_text

from .abort import AbortSignal
from .errors import ProviderError, classify_http_error, not_event_stream, proxy_http_error, redact
from .proxy import client_for, route_for
from .retry import RetryPolicy, with_retry
from .sse import EventTooLarge, SSEDecoder, SSEEvent
from .types import ModelInfo, StreamEvent, StreamOptions, WaitNotice
from .unstreamed import Unstreamed, ask_unstreamed

log = logging.getLogger(__name__)

_ABORT = object()
_END = object()

def request_body(body: Any) -> bytes:
    """The JSON request body as UTF-8 (what httpx's json= sends). A split or half UTF-16 pair a
    server streamed earlier in the conversation cannot be encoded: it is joined or replaced (the
    stored entry was repaired the same way), rather than failing every later request."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return well_formed_text(text).encode("utf-8")


ERROR_BODY_BYTES = 64 * 1024  # of an error answer's body: its message is in the first few hundred
ERROR_BODY_SECONDS = 10.0  # to read that much (a body that trickles or never ends)
SNIFF_BYTES = 64 * 1024  # read of a body that does not say it is SSE, to tell whether it is
_DELTAS = ("text_delta", "thinking_delta", "toolcall_delta")
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization")
_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")


class Pieces:
    """Streamed text gathered as pieces per block and attribute, joined into the block once per
    network read (`flush`) instead of once per delta: a string grown by `+` is copied whole every
    time, which made a long reply quadratic."""

    def __init__(self) -> None:
        self._open: dict[tuple[int, str], tuple[Any, list[str]]] = {}

    def add(self, block: Any, attr: str, text: str) -> None:
        held = self._open.get((id(block), attr))
        if held is None:
            self._open[(id(block), attr)] = (block, [text])
        else:
            held[1].append(text)

    def flush(self) -> None:
        for (_, attr), (block, parts) in self._open.items():
            setattr(block, attr, getattr(block, attr) + "".join(parts))
        self._open.clear()


class ProtocolParser(Protocol):
    """Turns SSE events into stream events. Deltas go through `pieces`; the events' `partial` is
    replaced by one snapshot per read (after `pieces.flush()`), so a parser may put its live
    message there."""

    message: AssistantMessage
    finished: bool  # the protocol's terminal marker was seen
    pieces: Pieces

    def feed(self, event: SSEEvent) -> list[StreamEvent]: ...

    def finish(self) -> AssistantMessage: ...


def snapshot(message: AssistantMessage) -> AssistantMessage:
    """A copy listeners may keep: blocks and usage copied, strings shared."""
    return message.model_copy(
        update={"content": [b.model_copy() for b in message.content], "usage": message.usage.model_copy(deep=True)}
    )


def _failed(message: AssistantMessage, reason: str, text: str) -> AssistantMessage:
    final = snapshot(message)
    final.stop_reason = reason  # type: ignore[assignment]
    final.error_message = text
    return final


class _Silence:
    """The producer's bounded wait for the next token, checked lazily by one timer.

    A token only stamps the time (streams carry thousands a second); the timer, when it fires,
    either announces a long silence, expires the attempt (via the enclosing `asyncio.timeout`),
    or sleeps until the next moment either could happen."""

    def __init__(self, options: StreamOptions, provider: str, announce: Callable[[WaitNotice], None]) -> None:
        self.options, self.provider, self.announce = options, provider, announce
        self.phase = "first_byte"
        self.expired = False
        self._loop = asyncio.get_running_loop()
        self._scope: asyncio.Timeout | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._announced = False

    @property
    def limit(self) -> float:
        return self.options.first_byte_timeout if self.phase == "first_byte" else self.options.idle_timeout

    def start(self, scope: asyncio.Timeout, phase: str = "first_byte") -> None:
        """Begin a silence of `phase` now (a new attempt, or after the first token)."""
        self._scope, self.phase = scope, phase
        self._last, self._announced = self._loop.time(), False
        self._arm(self._last + min(self.options.notice_after, self.limit))

    def token(self) -> None:
        if self.phase == "first_byte" and self._scope is not None:
            self.start(self._scope, "idle")
            return
        self._last, self._announced = self._loop.time(), False

    def pause(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, when: float) -> None:
        self.pause()
        self._handle = self._loop.call_at(when, self._check)

    def _check(self) -> None:
        self._handle = None
        now = self._loop.time()
        silent = now - self._last
        if silent >= self.limit:
            self.expired = True
            if self._scope is not None and not self._scope.expired():
                try:
                    self._scope.reschedule(now)  # the scope cancels the attempt; TimeoutError at its exit
                except RuntimeError:  # the scope already ended: nothing left to stop
                    pass
            return
        if not self._announced and silent >= self.options.notice_after:
            self._announced = True
            self.announce(WaitNotice(self.phase, self.limit, time.monotonic() - silent,  # type: ignore[arg-type]
                                     waited=silent, provider=self.provider))
        due = self._last + self.limit if self._announced else self._last + self.options.notice_after
        self._arm(min(due, self._last + self.limit))


async def run_http_stream(
    *,
    model: ModelInfo,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    parser: ProtocolParser,
    options: StreamOptions,
    signal: AbortSignal | None,
    unstreamed: Unstreamed | None = None,
) -> AsyncIterator[StreamEvent]:
    """`unstreamed`: how to ask once more without streaming when the stream ends with no data
    (the server's own error, or its reply; see unstreamed.py)."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    policy: RetryPolicy = options.retry or RetryPolicy()
    # reads are bounded by _Silence (httpx's read timeout would restart on every keep-alive byte)
    timeout = httpx.Timeout(connect=options.connect_timeout, read=None, write=60.0, pool=options.connect_timeout)
    provider = model.provider
    route = route_for(url, local=model.local)
    secrets = [options.api_key, route.password]
    for name, value in headers.items():
        if name.lower() in _SECRET_HEADERS:
            secrets += [value, value.partition(" ")[2]]
    silence = _Silence(options, provider, queue.put_nowait)

    def proxy_failure(err: Exception) -> ProviderError:
        return ProviderError("transport", f"Could not get through the proxy {route.shown} (from {route.source}) to "
                             f"{provider} ({type(err).__name__}: {err}); check the proxy, or add the host to NO_PROXY.",
                             retryable=not str(err).startswith("407"))

    async def open_response(client: httpx.AsyncClient, scope: asyncio.Timeout) -> httpx.Response:
        silence.start(scope)
        request = client.build_request("POST", url, headers=headers, content=request_body(body))
        try:
            response = await client.send(request, stream=True)
        except httpx.ProxyError as err:
            raise proxy_failure(err) from None
        except httpx.TimeoutException as err:
            if route.proxy and isinstance(err, httpx.ConnectTimeout):
                raise proxy_failure(err) from None
            raise ProviderError(
                "timeout", f"Could not connect to {provider} at {model.base_url} within {options.connect_timeout:g} s; "
                "check that the server is up."
            ) from None
        except httpx.TransportError as err:
            if route.proxy and isinstance(err, httpx.ConnectError):
                raise proxy_failure(err) from None
            raise ProviderError(
                "transport", f"Could not reach {provider} at {model.base_url} ({type(err).__name__}); check the base URL and that the server is running."
            ) from None
        if response.status_code >= 300:
            try:
                text = await _error_body(response)
            finally:
                await response.aclose()
            via_proxy = proxy_http_error(response.status_code, text, proxy=route.shown, source=route.source,
                                         provider=provider) if route.proxy else None
            if via_proxy is not None:
                raise via_proxy
            error = classify_http_error(
                response.status_code, response.headers, text, provider=provider, model=model.id, base_url=model.base_url
            )
            if route.proxy:  # the answer may be the proxy's own: say it was in the way
                error.args = (f"{error} (The request went through the proxy {route.shown}, from {route.source}.)",)
            raise error
        return response

    def on_retry(attempt: int, delay: float, error: ProviderError) -> None:
        silence.pause()
        queue.put_nowait(WaitNotice("retry", delay, time.monotonic(), attempt=attempt, max_attempts=policy.max_retries,
                                    reason=redact(str(error), secrets), retry_after=error.retry_after is not None,
                                    provider=provider))

    size = 0  # UTF-8 bytes of text, thinking and tool arguments so far
    received = 0  # SSE events decoded; none when the stream ended with no data

    def feed(decoder_events: list[SSEEvent]) -> None:
        """One read's events: deltas of one block in a row become one event, and all of them
        share one snapshot (taken once the read's text is joined in)."""
        nonlocal size, received
        received += len(decoder_events)
        batch: list[tuple[StreamEvent, list[str]]] = []  # an event, and the deltas it stands for
        for sse in decoder_events:
            events = parser.feed(sse)
            if events:
                silence.token()
            for ev in events:
                if ev.delta:
                    size += len(ev.delta.encode("utf-8", "surrogatepass"))
                last = batch[-1][0] if batch else None
                if (last is not None and ev.type in _DELTAS and last.type == ev.type
                        and last.content_index == ev.content_index):
                    batch[-1][1].append(ev.delta)
                else:
                    batch.append((ev, [ev.delta]))
            if size > options.max_reply_bytes:
                break
        if batch:
            parser.pieces.flush()
            shared = snapshot(parser.message)
            for ev, deltas in batch:
                delta = deltas[0] if len(deltas) == 1 else "".join(deltas)
                queue.put_nowait(StreamEvent(ev.type, shared, delta, ev.content_index))
        if size > options.max_reply_bytes:
            raise ProviderError("limit", f"The reply from {provider} passed {_mb(options.max_reply_bytes)} and was "
                                "stopped there (what arrived is kept); raise max_reply_mb in config.toml if a reply "
                                "really needs more.")

    async def read(response: httpx.Response) -> None:
        chunks = response.aiter_bytes()
        first = b""
        ctype = response.headers.get("content-type", "")
        if ctype.split(";", 1)[0].strip().lower() != "text/event-stream":
            # sniff: some servers send SSE as text/plain or with no type; an HTML page or JSON never passes
            async for chunk in chunks:
                first += chunk
                if len(first.lstrip()) >= 8 or len(first) >= SNIFF_BYTES:
                    break
            if not first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_SSE_STARTS):
                raise not_event_stream(ctype, first[:2000], provider=provider, base_url=model.base_url)
        queue.put_nowait(StreamEvent("start", snapshot(parser.message)))
        decoder = SSEDecoder(max_event=options.max_reply_bytes)
        try:
            feed(decoder.feed(first))
            async for chunk in chunks:
                feed(decoder.feed(chunk))
            feed(decoder.close())
        except EventTooLarge:
            raise ProviderError("limit", f"{provider} sent one event of over {_mb(options.max_reply_bytes)}, more "
                                "than a whole reply may hold, and the reply was stopped; raise max_reply_mb in "
                                "config.toml if a reply really needs more.") from None

    async def attempt_and_read(client: httpx.AsyncClient) -> None:
        async with asyncio.timeout(None) as scope:
            response = await with_retry(lambda: open_response(client, scope), policy, signal=signal, on_retry=on_retry)
            try:
                await read(response)
            except httpx.TransportError as err:
                if parser.finished:  # its end marker, then a dropped connection: the server cut the reply
                    raise ProviderError("transport", f"{provider} ended the reply and dropped the connection "
                                        f"({type(err).__name__}): a llama-cpp-python server cuts a reply short so "
                                        "when another request reaches it meanwhile (start it with "
                                        "--interrupt_requests False); try again.") from None
                raise ProviderError(
                    "transport", f"The connection to {provider} was lost mid-reply ({type(err).__name__}); try again."
                ) from None
            finally:
                silence.pause()
                await response.aclose()
            if unstreamed is not None and not received and not parser.finished:
                silence.start(scope)  # the answer is bounded as the stream's first byte was
                try:
                    feed(await ask_unstreamed(client, url, headers, request_body(unstreamed.body(body)), unstreamed,
                                              provider=provider, model=model.id, base_url=model.base_url))
                finally:
                    silence.pause()

    async def produce() -> None:
        try:
            try:
                client = client_for(route, timeout=timeout, transport=options.transport)
            except ImportError:
                raise ProviderError("transport", f"The proxy {route.shown} (from {route.source}) needs SOCKS support "
                                    "(pip install 'httpx[socks]'), or add the host to NO_PROXY.") from None
            async with client:
                try:
                    async with asyncio.timeout(options.reply_timeout) as whole:
                        await attempt_and_read(client)
                except TimeoutError:
                    if silence.expired:
                        raise _silence_error(silence, provider, model.base_url) from None
                    if whole.expired():
                        raise ProviderError(
                            "timeout", f"The reply from {provider} was still going after {options.reply_timeout:g} s "
                            "and was stopped (what arrived is kept); raise reply_timeout in config.toml for longer "
                            "replies.") from None
                    raise
            if not parser.finished:
                raise ProviderError(
                    "transport", f"The reply from {provider} ended without its end marker (stream ended without completion); try again."
                )
            queue.put_nowait(_END)
        except asyncio.CancelledError:
            raise
        except ProviderError as err:
            queue.put_nowait(err)
        except Exception as err:  # a bug or an unexpected library error: still a legal message
            log.debug("unexpected stream failure", exc_info=True)
            queue.put_nowait(ProviderError("protocol", f"The reply from {provider} could not be read ({type(err).__name__}); "
                                           "what arrived is kept. Try again; if it happens again, it is worth a bug report."))
        finally:
            silence.pause()

    task = asyncio.create_task(produce())
    remove = signal.add_listener(lambda: queue.put_nowait(_ABORT)) if signal else (lambda: None)
    started = False
    try:
        while True:
            item = await queue.get()
            if item is _ABORT:
                task.cancel()
                parser.pieces.flush()
                yield StreamEvent("error", _failed(parser.message, "aborted", "Request was aborted"))
                return
            if isinstance(item, WaitNotice):
                await _announce(options, item)
                continue
            if isinstance(item, ProviderError):
                parser.pieces.flush()
                reason = "aborted" if item.kind == "aborted" else "error"
                final = _failed(parser.message, reason, redact(str(item), secrets))
                final.errorKind = item.kind  # type: ignore[attr-defined]  # an extra field, kept on disk: compaction reads it
                yield StreamEvent("error", final)
                return
            if item is _END:
                parser.pieces.flush()
                yield StreamEvent("done", parser.finish())
                return
            if item.type == "start":
                if started:
                    continue
                started = True
            yield item
    finally:
        remove()
        if not task.done():
            task.cancel()
            try:
                await task
            except BaseException:
                pass


async def _error_body(response: httpx.Response) -> str:
    """The start of an error answer's body: ERROR_BODY_BYTES at most, read within
    ERROR_BODY_SECONDS (a body that never ends, or trickles, is cut there)."""
    data = bytearray()
    try:
        async with asyncio.timeout(ERROR_BODY_SECONDS):
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) >= ERROR_BODY_BYTES:
                    break
    except (httpx.HTTPError, TimeoutError):
        pass  # what arrived is the message
    return bytes(data[:ERROR_BODY_BYTES]).decode("utf-8", errors="replace")


def _mb(size: int) -> str:
    return f"{size / 1e6:g} MB"


def _silence_error(silence: _Silence, provider: str, base_url: str) -> ProviderError:
    if silence.phase == "first_byte":
        return ProviderError(
            "timeout", f"{provider} at {base_url} sent no reply within {silence.limit:g} s; check that the server is "
            "up, or raise first_byte_timeout in config.toml for a slow model."
        )
    return ProviderError(
        "timeout", f"{provider} stopped sending for {silence.limit:g} s mid-reply; try again, or raise idle_timeout "
        "in config.toml."
    )


async def _announce(options: StreamOptions, notice: WaitNotice) -> None:
    """Tell the caller about a wait; a failing listener must not break the stream."""
    callbacks: list[Callable[[], Any]] = []
    if options.on_wait is not None:
        on_wait = options.on_wait
        callbacks.append(lambda: on_wait(notice))
    if notice.kind == "retry" and options.on_retry is not None:
        on_retry = options.on_retry
        callbacks.append(lambda: on_retry(notice.attempt, notice.seconds, notice.reason))
    for call in callbacks:
        try:
            result = call()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("a wait listener failed")
