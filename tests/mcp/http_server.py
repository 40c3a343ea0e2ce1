"""An MCP server over streamable HTTP built with the SDK (MCPServer), served by uvicorn on a free
loopback port inside the test, behind a bearer-token check."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

TOKEN = "s3cret-token"


@asynccontextmanager
async def http_server(token: str = TOKEN) -> AsyncIterator[str]:
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("treechat-test-http")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return f"{a} + {b} = {a + b}"

    inner = server.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve())
    for _ in range(500):
        if web.started:
            break
        await asyncio.sleep(0.01)
    assert web.started, "the test's HTTP MCP server did not start"
    port = web.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 10)


def _gzip_answer(request_id: object, text_bytes: int) -> bytes:
    """A tools/call answer of one text block of `text_bytes` x's, gzip-compressed (about 1,000 to 1)."""
    import zlib

    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [squeeze.compress(b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
                              + b',"result":{"content":[{"type":"text","text":"')]
    block = b"x" * (1 << 20)
    for _ in range(text_bytes >> 20):
        parts.append(squeeze.compress(block))
    parts.append(squeeze.compress(b'"}]}}'))
    parts.append(squeeze.flush())
    return b"".join(parts)


def _blocks_answer(request_id: object, count: int) -> bytes:
    return (b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"content":['
            + b",".join([b'{"type":"text","text":""}'] * count) + b"]}}")


@asynccontextmanager
async def hostile_http_server(bomb_bytes: int = 50 << 20) -> AsyncIterator[str]:
    """An SDK server over streamable HTTP whose tools `bomb` and `blocks` are answered by a layer in
    front of it: `bomb` with a gzip-compressed answer of `bomb_bytes` (it says Content-Encoding:
    gzip), `blocks` with 15 MB of empty content blocks. `add` is the SDK's own."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("treechat-test-hostile")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return f"{a} + {b} = {a + b}"

    @server.tool()
    def bomb() -> str:
        """Answered by the layer in front."""
        return "not this"

    @server.tool()
    def blocks() -> str:
        """Answered by the layer in front."""
        return "not this"

    inner = server.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await inner(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body) if body.strip() else {}
        name = (request.get("params") or {}).get("name") if isinstance(request, dict) else None
        if isinstance(request, dict) and request.get("method") == "tools/call" and name in ("bomb", "blocks"):
            payload = _gzip_answer(request["id"], bomb_bytes) if name == "bomb" else _blocks_answer(request["id"], 550_000)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            if name == "bomb":
                headers.append((b"content-encoding", b"gzip"))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await inner(scope, replay, send)

    async with _served(app) as url:
        yield url


@asynccontextmanager
async def _served(app: Any) -> AsyncIterator[str]:
    import uvicorn

    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    task = asyncio.create_task(web.serve())
    for _ in range(500):
        if web.started:
            break
        await asyncio.sleep(0.01)
    assert web.started, "the test's HTTP MCP server did not start"
    port = web.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 10)
