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
from collections.abc import AsyncIterator, Awaitable, Callable
from enum import Enum
from typing import Literal, Protocol

import httpx

from treechat.storage.json_types import JsonObject
from treechat.storage.model import AssistantMessage, ContentBlock, StopReason
from treechat.storage.well_formed import well_formed_text

from .abort import AbortSignal
from .content_encoding import BodyEncodingError, body_chunks
from .errors import ProviderError, classify_http_error, not_event_stream, proxy_http_error, redact
from .proxy import client_for, route_for
from .retry import RetryPolicy, with_retry
from .sse import EventTooLarge, SSEDecoder, SSEEvent
from .types import ModelInfo, StreamEvent, StreamOptions, WaitNotice
from .unstreamed import Unstreamed, ask_unstreamed

log = logging.getLogger(__name__)



class _Mark(Enum):
    """What the queue carries besides events, notices and the failure: the stream's two ends."""

    ABORT = "the caller's signal"
    END = "the producer finished"


_Item = StreamEvent | WaitNotice | ProviderError | _Mark

def request_body(body: JsonObject) -> bytes:
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
        self._open: dict[tuple[int, str], tuple[ContentBlock, list[str]]] = {}

    def add(self, block: ContentBlock, attr: str, text: str) -> None:
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
    """A copy listeners may keep: blocks and usage copied, strings shared. (The usage's two levels
    are copied one by one: they hold numbers only, and a deep copy cost as much as the rest of the
    read with several replies streaming at once.)"""
    usage = message.usage.model_copy(update={"cost": message.usage.cost.model_copy()})
    return message.model_copy(update={"content": [b.model_copy() for b in message.content], "usage": usage})


def _failed(message: AssistantMessage, reason: StopReason, text: str) -> AssistantMessage:
    final = snapshot(message)
    final.stop_reason = reason
    final.error_message = text
    return final


class _Silence:
    """The producer's bounded wait for the next token, checked lazily by one timer.

    A token only stamps the time (streams carry thousands a second); the timer, when it fires,
    either announces a long silence, expires the attempt (via the enclosing `asyncio.timeout`),
    or sleeps until the next moment either could happen."""

    def __init__(self, options: StreamOptions, provider: str, announce: Callable[[WaitNotice], None]) -> None:
        self.options, self.provider, self.announce = options, provider, announce
        self.phase: Literal["first_byte", "idle"] = "first_byte"
        self.expired = False
        self._loop = asyncio.get_running_loop()
        self._scope: asyncio.Timeout | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._announced = False

    @property
    def limit(self) -> float:
        return self.options.first_byte_timeout if self.phase == "first_byte" else self.options.idle_timeout

    def start(self, scope: asyncio.Timeout, phase: Literal["first_byte", "idle"] = "first_byte") -> None:
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
            self.announce(WaitNotice(self.phase, self.limit, time.monotonic() - silent,
                                     waited=silent, provider=self.provider))
        due = self._last + self.limit if self._announced else self._last + self.options.notice_after
        self._arm(min(due, self._last + self.limit))


class _Request:
    """One streamed request, by phase: connect (`open_response`, `refused`), the first byte and
    the read loop (`read`, `feed`), the unstreamed second ask, and what each failure says
    (`produce`). It runs as the producer task; `run_http_stream` is the consumer."""

    def __init__(self, model: ModelInfo, url: str, headers: dict[str, str], body: JsonObject,
                 parser: ProtocolParser, options: StreamOptions, signal: AbortSignal | None,
                 unstreamed: Unstreamed | None) -> None:
        self.model, self.url, self.headers, self.body = model, url, headers, body
        self.parser, self.options, self.signal, self.unstreamed = parser, options, signal, unstreamed
        self.queue: asyncio.Queue[_Item] = asyncio.Queue()
        self.policy: RetryPolicy = options.retry or RetryPolicy()
        # reads are bounded by _Silence (httpx's read timeout would restart on every keep-alive byte)
        self.timeout = httpx.Timeout(connect=options.connect_timeout, read=None, write=60.0,
                                     pool=options.connect_timeout)
        self.provider = model.provider
        self.route = route_for(url, local=model.local)
        self.secrets = [options.api_key, self.route.password]
        for name, value in headers.items():
            if name.lower() in _SECRET_HEADERS:
                self.secrets += [value, value.partition(" ")[2]]
        self.silence = _Silence(options, self.provider, self.queue.put_nowait)
        self.size = 0  # UTF-8 bytes of text, thinking and tool arguments so far
        self.received = 0  # SSE events decoded; none when the stream ended with no data

    def proxy_failure(self, err: Exception) -> ProviderError:
        route = self.route
        return ProviderError("transport", f"Could not get through the proxy {route.shown} (from {route.source}) to "
                             f"{self.provider} ({type(err).__name__}: {err}); check the proxy, or add the host to "
                             "NO_PROXY.", retryable=not str(err).startswith("407"))

    async def open_response(self, client: httpx.AsyncClient, scope: asyncio.Timeout) -> httpx.Response:
        """Connect and send: the response, once its status says a stream follows."""
        provider, model, route = self.provider, self.model, self.route
        self.silence.start(scope)
        request = client.build_request("POST", self.url, headers=self.headers, content=request_body(self.body))
        try:
            response = await client.send(request, stream=True)
        except httpx.ProxyError as err:
            raise self.proxy_failure(err) from None
        except httpx.TimeoutException as err:
            if route.proxy and isinstance(err, httpx.ConnectTimeout):
                raise self.proxy_failure(err) from None
            raise ProviderError(
                "timeout", f"Could not connect to {provider} at {model.base_url} within "
                f"{self.options.connect_timeout:g} s; check that the server is up."
            ) from None
        except httpx.TransportError as err:
            if route.proxy and isinstance(err, httpx.ConnectError):
                raise self.proxy_failure(err) from None
            raise ProviderError(
                "transport", f"Could not reach {provider} at {model.base_url} ({type(err).__name__}); check the base URL and that the server is running."
            ) from None
        if response.status_code >= 300:
            raise await self.refused(response)
        return response

    async def refused(self, response: httpx.Response) -> ProviderError:
        """The error an answer of status 300 or more stands for (its body read, bounded)."""
        provider, model, route = self.provider, self.model, self.route
        try:
            text = await _error_body(response)
        finally:
            await response.aclose()
        via_proxy = proxy_http_error(response.status_code, text, proxy=route.shown, source=route.source,
                                     provider=provider) if route.proxy else None
        if via_proxy is not None:
            return via_proxy
        error = classify_http_error(
            response.status_code, response.headers, text, provider=provider, model=model.id, base_url=model.base_url
        )
        if route.proxy:  # the answer may be the proxy's own: say it was in the way
            error.args = (f"{error} (The request went through the proxy {route.shown}, from {route.source}.)",)
        return error

    def on_retry(self, attempt: int, delay: float, error: ProviderError) -> None:
        self.silence.pause()
        self.queue.put_nowait(WaitNotice("retry", delay, time.monotonic(), attempt=attempt,
                                         max_attempts=self.policy.max_retries,
                                         reason=redact(str(error), self.secrets),
                                         retry_after=error.retry_after is not None, provider=self.provider))

    def feed(self, decoder_events: list[SSEEvent]) -> None:
        """One read's events: deltas of one block in a row become one event, and all of them
        share one snapshot (taken once the read's text is joined in)."""
        parser, limit = self.parser, self.options.max_reply_bytes
        self.received += len(decoder_events)
        batch: list[tuple[StreamEvent, list[str]]] = []  # an event, and the deltas it stands for
        for sse in decoder_events:
            events = parser.feed(sse)
            if events:
                self.silence.token()
            for ev in events:
                if ev.delta:
                    self.size += len(ev.delta.encode("utf-8", "surrogatepass"))
                last = batch[-1][0] if batch else None
                if (last is not None and ev.type in _DELTAS and last.type == ev.type
                        and last.content_index == ev.content_index):
                    batch[-1][1].append(ev.delta)
                else:
                    batch.append((ev, [ev.delta]))
            if self.size > limit:
                break
        if batch:
            parser.pieces.flush()
            shared = snapshot(parser.message)
            for ev, deltas in batch:
                delta = deltas[0] if len(deltas) == 1 else "".join(deltas)
                self.queue.put_nowait(StreamEvent(ev.type, shared, delta, ev.content_index))
        if self.size > limit:
            raise ProviderError("limit", f"The reply from {self.provider} passed {_mb(limit)} and was "
                                "stopped there (what arrived is kept); raise max_reply_mb in config.toml if a reply "
                                "really needs more.")

    async def sniff(self, response: httpx.Response, chunks: AsyncIterator[bytes]) -> bytes:
        """The first bytes of a body whose type is not SSE, when they are SSE all the same (some
        servers send it as text/plain or with no type); an HTML page or JSON never passes."""
        first = b""
        ctype = response.headers.get("content-type", "")
        if ctype.split(";", 1)[0].strip().lower() != "text/event-stream":
            async for chunk in chunks:
                first += chunk
                if len(first.lstrip()) >= 8 or len(first) >= SNIFF_BYTES:
                    break
            if not first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_SSE_STARTS):
                raise not_event_stream(ctype, first[:2000], provider=self.provider, base_url=self.model.base_url)
        return first

    async def read(self, response: httpx.Response) -> None:
        chunks = body_chunks(response)  # a compressed body: decompressed a piece at a time, so each bound holds
        decoder = SSEDecoder(max_event=self.options.max_reply_bytes)
        try:
            first = await self.sniff(response, chunks)
            self.queue.put_nowait(StreamEvent("start", snapshot(self.parser.message)))
            self.feed(decoder.feed(first))
            async for chunk in chunks:
                self.feed(decoder.feed(chunk))
            self.feed(decoder.close())
        except BodyEncodingError as err:
            raise ProviderError("protocol", f"{self.provider} sent a reply treechat cannot read: {err}.",
                                retryable=False) from None
        except EventTooLarge:
            raise ProviderError("limit", f"{self.provider} sent one event of over {_mb(self.options.max_reply_bytes)}, "
                                "more than a whole reply may hold, and the reply was stopped; raise max_reply_mb in "
                                "config.toml if a reply really needs more.") from None

    async def attempt_and_read(self, client: httpx.AsyncClient) -> None:
        provider, parser = self.provider, self.parser
        async with asyncio.timeout(None) as scope:
            response = await with_retry(lambda: self.open_response(client, scope), self.policy, signal=self.signal,
                                        on_retry=self.on_retry)
            try:
                await self.read(response)
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
                self.silence.pause()
                await response.aclose()
            if self.unstreamed is not None and not self.received and not parser.finished:
                await self.ask_unstreamed(client, self.unstreamed, scope)

    async def ask_unstreamed(self, client: httpx.AsyncClient, unstreamed: Unstreamed, scope: asyncio.Timeout) -> None:
        self.silence.start(scope)  # the answer is bounded as the stream's first byte was
        try:
            self.feed(await ask_unstreamed(client, self.url, self.headers, request_body(unstreamed.body(self.body)),
                                           unstreamed, provider=self.provider, model=self.model.id,
                                           base_url=self.model.base_url))
        finally:
            self.silence.pause()

    async def run(self) -> None:
        """The request within its whole-reply bound, each timeout said as the bound it hit."""
        route, provider, options = self.route, self.provider, self.options
        try:
            client = client_for(route, timeout=self.timeout, transport=options.transport)
        except ImportError:
            raise ProviderError("transport", f"The proxy {route.shown} (from {route.source}) needs SOCKS support "
                                "(pip install 'httpx[socks]'), or add the host to NO_PROXY.") from None
        async with client:
            try:
                async with asyncio.timeout(options.reply_timeout) as whole:
                    await self.attempt_and_read(client)
            except TimeoutError:
                if self.silence.expired:
                    raise _silence_error(self.silence, provider, self.model.base_url) from None
                if whole.expired():
                    raise ProviderError(
                        "timeout", f"The reply from {provider} was still going after {options.reply_timeout:g} s "
                        "and was stopped (what arrived is kept); raise reply_timeout in config.toml for longer "
                        "replies.") from None
                raise
        if not self.parser.finished:
            raise ProviderError(
                "transport", f"The reply from {provider} ended without its end marker (stream ended without completion); try again."
            )

    async def produce(self) -> None:
        """The producer task: everything it ends with goes into the queue as an item."""
        try:
            await self.run()
            self.queue.put_nowait(_Mark.END)
        except asyncio.CancelledError:
            raise
        except ProviderError as err:
            self.queue.put_nowait(err)
        except Exception as err:  # a bug or an unexpected library error: still a legal message
            log.debug("unexpected stream failure", exc_info=True)
            self.queue.put_nowait(ProviderError(
                "protocol", f"The reply from {self.provider} could not be read ({type(err).__name__}); "
                "what arrived is kept. Try again; if it happens again, it is worth a bug report."))
        finally:
            self.silence.pause()


async def run_http_stream(
    *,
    model: ModelInfo,
    url: str,
    headers: dict[str, str],
    body: JsonObject,
    parser: ProtocolParser,
    options: StreamOptions,
    signal: AbortSignal | None,
    unstreamed: Unstreamed | None = None,
) -> AsyncIterator[StreamEvent]:
    """`unstreamed`: how to ask once more without streaming when the stream ends with no data
    (the server's own error, or its reply; see unstreamed.py)."""
    request = _Request(model, url, headers, body, parser, options, signal, unstreamed)
    queue = request.queue
    task = asyncio.create_task(request.produce())
    remove = signal.add_listener(lambda: queue.put_nowait(_Mark.ABORT)) if signal else (lambda: None)
    started = False
    try:
        while True:
            item = await queue.get()
            if item is _Mark.ABORT:
                task.cancel()
                parser.pieces.flush()
                yield StreamEvent("error", _failed(parser.message, "aborted", "Request was aborted"))
                return
            if isinstance(item, WaitNotice):
                await _announce(options, item)
                continue
            if isinstance(item, ProviderError):
                parser.pieces.flush()
                reason: StopReason = "aborted" if item.kind == "aborted" else "error"
                final = _failed(parser.message, reason, redact(str(item), request.secrets))
                final.error_kind = item.kind  # kept on disk: compaction reads it
                yield StreamEvent("error", final)
                return
            if item is _Mark.END:
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
            except asyncio.CancelledError:  # the cancel just asked for (the producer lets nothing else out)
                pass


async def _error_body(response: httpx.Response) -> str:
    """The start of an error answer's body: ERROR_BODY_BYTES at most, read within
    ERROR_BODY_SECONDS (a body that never ends, or trickles, is cut there)."""
    data = bytearray()
    try:
        async with asyncio.timeout(ERROR_BODY_SECONDS):
            async for chunk in body_chunks(response):
                data += chunk
                if len(data) >= ERROR_BODY_BYTES:
                    break
    except (httpx.HTTPError, TimeoutError, BodyEncodingError):
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
    callbacks: list[Callable[[], Awaitable[None] | None]] = []
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
