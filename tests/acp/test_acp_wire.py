"""What an ACP client can send that is not a good message: every line gets its JSON-RPC error,
the process keeps serving, stdout carries protocol lines only and stderr no traceback."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from treechat.acp.wire import MAX_LINE


async def test_bad_input_is_answered_and_the_process_keeps_serving(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "TREECHAT_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "k"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "treechat", "acp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, limit=1 << 20)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines = [
        b"not json at all",
        b"x" * (MAX_LINE + 1000),  # over the bound: skipped as it arrives
        b"[" * 100_000,  # nested deeper than a parser goes
        b"[1, 2]",
        b'{"jsonrpc": "2.0", "id": {"an": "object"}, "method": "initialize"}',
        b'{"jsonrpc": "2.0", "id": 5, "method": 42}',
        b'{"jsonrpc": "2.0", "id": 6, "method": "no/such/method"}',
        b'{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": 1}}',
        b'{"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}',
        b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"no": "session"}}',
        b'{"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": "not/absolute", "mcpServers": []}}',
        b'{"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {"protocolVersion": 1}}',
        b'{"jsonrpc": "2.0", "id": 11, "method": "session/new", "params": {"cwd": "' + str(work).encode()
        + b'", "mcpServers": []}}',
    ]

    stdin = proc.stdin

    async def feed() -> None:
        for line in lines:
            stdin.write(line + b"\n")
            await stdin.drain()
        stdin.close()

    feeding = asyncio.ensure_future(feed())
    out, err = await asyncio.wait_for(asyncio.gather(proc.stdout.read(), proc.stderr.read()), 120)
    await feeding
    assert await proc.wait() == 0
    replies = [json.loads(line) for line in out.splitlines()]  # stdout: protocol lines only
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    by_id = {json.dumps(r.get("id")): r for r in replies if r.get("id") is not None}
    anonymous = [r["error"] for r in replies if r.get("id") is None]
    assert [e["code"] for e in anonymous] == [-32700, -32600, -32700, -32600, -32600]
    assert "bytes was skipped" in anonymous[1]["data"]["details"]
    assert "nested too deeply" in anonymous[2]["data"]["details"]
    assert by_id["5"]["error"]["code"] == -32600
    assert by_id["6"]["error"]["code"] == -32601
    assert by_id["7"]["error"]["code"] == -32602
    assert by_id["8"]["error"]["code"] == -32002
    assert by_id["9"]["error"]["code"] == -32602 and "absolute" in by_id["9"]["error"]["data"]["details"]
    assert by_id["10"]["result"]["protocolVersion"] == 1
    assert by_id["11"]["result"]["sessionId"]
    assert b"Traceback" not in err, err.decode()
