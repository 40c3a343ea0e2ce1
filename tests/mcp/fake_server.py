"""A fake MCP server over stdio for faults and speed (the real ones are mcp-server-time and the
SDK's own HTTP server): plain JSON-RPC lines, the handshake-era protocol, no SDK import, so it
starts in milliseconds. Its tools: echo, picture (a PNG), link (a resource link and an embedded
text resource), huge (a result over the client's bound), flood (much text), hang (never
answers), crash (exits mid-call), slow (answers after `seconds`).

Run as `python fake_server.py [--crash-at-start] [--silent] [--flaky FILE]`: `--flaky FILE`
exits at its first `crash` call and counts its starts in FILE.

`--wait-for FILE` answers nothing until FILE exists.
Hostile options (tests/faults): `--say TEXT` writes TEXT to stderr and exits at start;
`--tools N [--page P]` lists N more tools (`t0`, `t1`, …), P a page (0: all in one answer);
`--big-schema` gives the first of them a 100 KB schema; `--flood N` sends N notifications
(logging, progress, list_changed, in turn) as fast as the pipe takes them, once it has listed its tools.
The tool `blocks` answers `count` empty text blocks (15 MB is 500,000).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import time

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()

TOOLS = [
    {"name": "echo", "description": "Say it back", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "picture", "description": "A one-pixel PNG", "inputSchema": {"type": "object"}},
    {"name": "link", "description": "A resource link", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "Too much", "inputSchema": {"type": "object"}},
    {"name": "flood", "description": "Lots of text", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exits", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Answers later", "inputSchema": {
        "type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "blocks", "description": "Many empty blocks", "inputSchema": {
        "type": "object", "properties": {"count": {"type": "integer"}}}},
]


WRITING = threading.Lock()  # the flood's thread and the answers share stdout


def send(message: dict) -> None:
    with WRITING:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def option(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


def listed_tools(argv: list[str]) -> list[dict]:
    extra = int(option(argv, "--tools", "0") or 0)
    more = [{"name": f"t{i}", "description": f"tool {i}", "inputSchema": {"type": "object"}} for i in range(extra)]
    if more and "--big-schema" in argv:
        more[0] = {**more[0], "inputSchema": {"type": "object", "description": "x" * 100_000}}
    return TOOLS + more


def flood(count: int) -> None:
    kinds: list[dict] = [{"method": "notifications/message", "params": {"level": "info", "data": "busy"}},
             {"method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
             {"method": "notifications/tools/list_changed"}]
    try:
        for i in range(count):
            send({"jsonrpc": "2.0", **kinds[i % len(kinds)]})
    except (BrokenPipeError, OSError):
        pass


def result(request_id: object, content: list, is_error: bool = False) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": content, "isError": is_error}})


def call(request_id: object, name: str, args: dict) -> None:
    if name == "echo":
        result(request_id, [{"type": "text", "text": f"echo: {args.get('text')}"}])
    elif name == "picture":
        result(request_id, [{"type": "text", "text": "here it is"},
                            {"type": "image", "data": PNG, "mimeType": "image/png"}])
    elif name == "link":
        result(request_id, [{"type": "resource_link", "uri": "file:///tmp/report.txt", "name": "report",
                             "mimeType": "text/plain", "description": "the report"},
                            {"type": "resource", "resource": {"uri": "mem://note", "text": "a note"}}])
    elif name == "huge":
        result(request_id, [{"type": "text", "text": "x" * 3_000_000}])
    elif name == "flood":
        result(request_id, [{"type": "text", "text": "line of text\n" * 20_000}])
    elif name == "hang":
        time.sleep(600)
    elif name == "crash":
        sys.stderr.write("fatal: the crash tool was called\n")
        sys.stderr.flush()
        sys.exit(7)
    elif name == "blocks":
        result(request_id, [{"type": "text", "text": ""}] * int(args.get("count", 500_000)))
    elif name == "slow":
        time.sleep(float(args.get("seconds", 1)))
        result(request_id, [{"type": "text", "text": "slow done"}])
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def at_start(argv: list[str]) -> None:
    """The start-up options: what happens before the server answers anything."""
    if "--flaky" in argv:
        count_file = argv[argv.index("--flaky") + 1]
        try:
            starts = int(open(count_file).read() or 0)
        except OSError:
            starts = 0
        open(count_file, "w").write(str(starts + 1))
    if "--crash-at-start" in argv:
        sys.stderr.write("Traceback (most recent call last):\nModuleNotFoundError: No module named 'missing_dep'\n")
        sys.exit(1)
    if "--silent" in argv:
        time.sleep(600)
    if "--wait-for" in argv:  # starts once FILE exists (a test holds it in "starting" as long as it needs)
        gate = option(argv, "--wait-for") or ""
        while not os.path.exists(gate):
            time.sleep(0.02)
    if "--say" in argv:
        sys.stderr.write(f"{option(argv, '--say')}\n")
        sys.exit(1)


def main() -> None:
    argv = sys.argv[1:]
    at_start(argv)
    tools = listed_tools(argv)
    page = int(option(argv, "--page", "0") or 0)
    flooding: list[threading.Thread] = []
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif method == "tools/list":
            start = int((message.get("params") or {}).get("cursor") or 0)
            end = start + page if page else len(tools)
            answer: dict = {"tools": tools[start:end]}
            if end < len(tools):
                answer["nextCursor"] = str(end)
            send({"jsonrpc": "2.0", "id": request_id, "result": answer})
            if "--flood" in argv and not flooding:  # once it has started: its listing is answered first
                flooding.append(threading.Thread(target=flood, args=(int(option(argv, "--flood") or 0),), daemon=True))
                flooding[0].start()
        elif method == "tools/call":
            params = message.get("params", {})
            call(request_id, params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
