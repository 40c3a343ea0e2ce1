"""The shared HTTP/SSE streaming runner both adapters plug a protocol parser into.

The HTTP work runs in a producer task that feeds a queue; abort puts a sentinel into the same
queue, so the consumer wakes at once, cancels the producer (closing the request) and finishes
with an `aborted` message that keeps the partial content.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Protocol

import httpx

from treechat.storage.model import AssistantMessage

from .abort import AbortSignal
from .errors import ProviderError, classify_http_error
from .retry import RetryPolicy, with_retry
from .sse import SSEDecoder, SSEEvent
from .types import ModelInfo, StreamEvent, StreamOptions

_ABORT = object()
_END = object()


class ProtocolParser(Protocol):
    message: AssistantMessage
    finished: bool  # the protocol's terminal marker was seen

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


async def run_http_stream(
    *,
    model: ModelInfo,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    parser: ProtocolParser,
    options: StreamOptions,
    signal: AbortSignal | None,
) -> AsyncIterator[StreamEvent]:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    policy: RetryPolicy = options.retry or RetryPolicy()
    timeout = httpx.Timeout(connect=options.connect_timeout, read=options.read_timeout, write=30, pool=10)
    provider = model.provider

    async def open_response(client: httpx.AsyncClient) -> httpx.Response:
        request = client.build_request("POST", url, headers=headers, json=body)
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException:
            raise ProviderError(
                "timeout", f"{provider} at {model.base_url} did not answer in time; check that the server is up."
            ) from None
        except httpx.TransportError as err:
            raise ProviderError(
                "transport", f"Could not reach {provider} at {model.base_url} ({type(err).__name__}); check the base URL and that the server is running."
            ) from None
        if response.status_code >= 300:
            try:
                text = (await response.aread()).decode("utf-8", errors="replace")
            except httpx.HTTPError:
                text = ""
            finally:
                await response.aclose()
            raise classify_http_error(
                response.status_code, response.headers, text, provider=provider, model=model.id, base_url=model.base_url
            )
        return response

    async def produce() -> None:
        try:
            async with httpx.AsyncClient(timeout=timeout, transport=options.transport) as client:
                response = await with_retry(
                    lambda: open_response(client), policy, signal=signal, on_retry=options.on_retry
                )
                try:
                    queue.put_nowait(StreamEvent("start", snapshot(parser.message)))
                    decoder = SSEDecoder()
                    async for chunk in response.aiter_bytes():
                        for sse in decoder.feed(chunk):
                            for ev in parser.feed(sse):
                                queue.put_nowait(ev)
                    for sse in decoder.close():
                        for ev in parser.feed(sse):
                            queue.put_nowait(ev)
                except httpx.TimeoutException:
                    raise ProviderError(
                        "timeout", f"{provider} stopped sending for {options.read_timeout:g} s mid-reply; try again."
                    ) from None
                except httpx.TransportError as err:
                    raise ProviderError(
                        "transport", f"The connection to {provider} was lost mid-reply ({type(err).__name__}); try again."
                    ) from None
                finally:
                    await response.aclose()
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
            queue.put_nowait(ProviderError("protocol", f"Unexpected error talking to {provider}: {err}"))

    task = asyncio.create_task(produce())
    remove = signal.add_listener(lambda: queue.put_nowait(_ABORT)) if signal else (lambda: None)
    started = False
    try:
        while True:
            item = await queue.get()
            if item is _ABORT:
                task.cancel()
                yield StreamEvent("error", _failed(parser.message, "aborted", "Request was aborted"))
                return
            if isinstance(item, ProviderError):
                reason = "aborted" if item.kind == "aborted" else "error"
                final = _failed(parser.message, reason, str(item))
                final.errorKind = item.kind  # extra field (kept on disk): compaction and retry read it
                yield StreamEvent("error", final)
                return
            if item is _END:
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
