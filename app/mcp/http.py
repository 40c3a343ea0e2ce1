"""A server spoken to over streamable HTTP (the SDK's transport), every answer bounded in bytes.

The SDK bounds one event of an event stream (`max_sse_event_size`) but reads a JSON answer
whole; our httpx2 transport counts the bytes of every response body and stops at
`max_message`, so a server that answers without end costs one error, not the memory. The bytes
counted are decompressed ones: a gzip or deflate body is decompressed here, a piece at a time
(`llm/content_encoding.py`), and httpx2 is left nothing to decompress (a 2 MB gzip answer of
2 GB passed the bound that counted the bytes on the wire). The objects and lists of an answer (of
each event of an event stream) are counted as they arrive too (`bounds.ItemCounter`).
Servers on this machine never go through a proxy (their headers may carry a token).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx2
from mcp.client.streamable_http import streamable_http_client

from treechat.llm.content_encoding import ACCEPT, BodyEncodingError, codings, decoded

from .bounds import ItemCounter, TooManyItems

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams  # (the SDK names it there only)

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0  # an event stream may stay quiet while a tool works; calls have their own limit


class AnswerTooLarge(httpx2.StreamError):
    pass


class _Counted(httpx2.AsyncByteStream):
    """A response body, decompressed here when it is encoded, its bytes and items counted."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, encoded: list[str], items: ItemCounter) -> None:
        self.inner, self.limit, self.encoded, self.items, self.seen = inner, limit, encoded, items, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = decoded(self.inner, self.encoded) if self.encoded else self.inner
        try:
            async for chunk in chunks:
                self.seen += len(chunk)
                if self.seen > self.limit:
                    raise AnswerTooLarge(f"the server's answer was over {self.limit // 1_000_000} MB; "
                                         "treechat stopped reading it")
                self.items.feed(chunk)
                yield chunk
        except (TooManyItems, BodyEncodingError) as err:
            raise AnswerTooLarge(str(err)) from None

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Bounded(httpx2.AsyncBaseTransport):
    def __init__(self, limit: int, *, trust_env: bool) -> None:
        self.inner = httpx2.AsyncHTTPTransport(trust_env=trust_env)
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = ACCEPT  # what _Counted decompresses
        response = await self.inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        encoded = codings(response.headers)
        if encoded:
            del response.headers["Content-Encoding"]  # decompressed in _Counted, counted as it is
        sse = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        response.stream = _Counted(stream, self.limit, encoded, ItemCounter(per_event=sse))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@asynccontextmanager
async def http_transport(url: str, headers: dict[str, str], *, max_message: int) -> AsyncIterator[TransportStreams]:
    local = is_loopback(url)
    client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
                                transport=_Bounded(max_message, trust_env=not local), trust_env=not local)
    async with client:
        async with streamable_http_client(url, http_client=client, max_sse_event_size=max_message) as streams:
            yield streams
