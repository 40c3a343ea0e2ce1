"""A server spoken to over streamable HTTP (the SDK's transport), every answer bounded in bytes.

The SDK bounds one event of an event stream (`max_sse_event_size`) but reads a JSON answer
whole; our httpx2 transport counts the bytes of every response body and stops at
`max_message`, so a server that answers without end costs one error, not the memory.
Servers on this machine never go through a proxy (their headers may carry a token).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp.client.streamable_http import streamable_http_client

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0  # an event stream may stay quiet while a tool works; calls have their own limit


class AnswerTooLarge(httpx2.StreamError):
    pass


class _Counted(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner, self.limit, self.seen = inner, limit, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.seen += len(chunk)
            if self.seen > self.limit:
                raise AnswerTooLarge(f"the server's answer was over {self.limit // 1_000_000} MB; "
                                     "treechat stopped reading it")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Bounded(httpx2.AsyncBaseTransport):
    def __init__(self, limit: int, *, trust_env: bool) -> None:
        self.inner = httpx2.AsyncHTTPTransport(trust_env=trust_env)
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _Counted(stream, self.limit)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@asynccontextmanager
async def http_transport(url: str, headers: dict[str, str], *, max_message: int) -> AsyncIterator[Any]:
    local = is_loopback(url)
    client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
                                transport=_Bounded(max_message, trust_env=not local), trust_env=not local)
    async with client:
        async with streamable_http_client(url, http_client=client, max_sse_event_size=max_message) as streams:
            yield streams
