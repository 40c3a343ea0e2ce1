"""An MCP server over streamable HTTP built with the SDK (MCPServer), served by uvicorn on a free
loopback port inside the test, behind a bearer-token check."""

from __future__ import annotations

import asyncio
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
