"""A loopback fake LLM provider: stdlib asyncio HTTP/1.1 on 127.0.0.1, scripted replies, faults.

    async with FakeProvider() as fp:
        fp.script_openai(text=["Hel", "lo"])           # or fp.script_anthropic(...), fp.script_responses(...)
        ... point OPENAI_BASE_URL / a ModelInfo at fp.base_url ...
        fp.requests[0].body["messages"]

Scripts are served first in, first out (optionally only for one path); a request with no script
gets a 404 JSON error so a test never hangs. Each script is a list of steps written against the raw
socket, so split frames, resets, hangs and bad bytes are all just data.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------- steps


@dataclass
class Status:
    code: int
    headers: dict[str, str] = field(default_factory=dict)
    framing: str = "chunked"  # "chunked" | "close" (body ends when we close: looks like a clean EOF)


@dataclass
class Send:
    data: bytes | Callable[[Recorded], bytes]  # a function gets the request (to echo its headers)


@dataclass
class Sleep:
    seconds: float


@dataclass
class Gate:
    """Pause the reply until the test sets the event (to act while a reply is streaming)."""

    event: asyncio.Event


@dataclass
class Hang:
    """Stop answering and wait for the client to give up (records the disconnect)."""

    limit: float = 30.0


@dataclass
class Drip:
    """Send `data` every `every` seconds until the client goes away (at most `limit` seconds):
    a server that keeps the connection alive with SSE comments (or pings) and never says anything."""

    data: bytes = b": ping\n\n"
    every: float = 0.05
    limit: float = 30.0
    max_bytes: int | None = None  # stop (and end the body) after sending this much: an "endless" body


@dataclass
class Reset:
    """Abort the TCP connection (no terminating chunk): a dropped connection mid-stream."""


_FAULT_KEYS = ("drop_after", "terminal", "hang_after", "path", "split", "gate", "gate_after", "drip_after", "drip",
               "every", "gap")
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    arrived_at: float  # time.monotonic() when the request was fully read
    arrived_wall_ms: int


# What treechat asks a server on a local address about its window (app/llm/detect.py) before the
# first request, and a server named by its URL about its models (`/models` under a base URL
# without /v1): answered only by a script for that path, like a server that is none of those kinds.
PROBE_PATHS = frozenset({"/props", "/api/show", "/api/ps", "/api/tags", "/api/v1/models", "/api/v0/models", "/v1/models",
                         "/models"})
_SURROGATE = re.compile("[\ud800-\udfff]")


def sse_frame(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if not isinstance(data, str) and not payload.isascii() and _SURROGATE.search(payload):
        payload = json.dumps(data)  # half a UTF-16 pair goes out as a JSON escape, as servers send it
    head = f"event: {event}\n" if event else ""
    return (head + f"data: {payload}\n\n").encode("utf-8")


# ---------------------------------------------------------------- protocol builders


def openai_chunks(
    text: Iterable[str] = (),
    *,
    reasoning: Iterable[str] = (),
    reasoning_field: str = "reasoning_content",
    tool_calls: Iterable[dict[str, Any]] = (),
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> list[Any]:
    """Chat Completions chunks. A tool call is {"id","name","arguments": [fragments...]}; index = its position."""
    env = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
    out: list[Any] = []

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {**env, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}], "usage": None}

    for piece in reasoning:
        out.append(chunk({reasoning_field: piece}))
    for piece in text:
        out.append(chunk({"content": piece}))
    calls = list(tool_calls)
    for i, call in enumerate(calls):
        frags = call.get("arguments", [""])
        frags = [frags] if isinstance(frags, str) else list(frags)
        first = {"index": i, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": frags[0] if frags else ""}}
        out.append(chunk({"tool_calls": [first]}))
        for frag in frags[1:]:
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}))
    out.append(chunk({}, finish or ("tool_calls" if calls else "stop")))
    if usage is not None:
        out.append({**env, "choices": [], "usage": usage})
    out.append("[DONE]")
    return out


def anthropic_events(
    text: Iterable[str] = (),
    *,
    thinking: Iterable[str] = (),
    signature: str | None = "sig-1",
    tool_calls: Iterable[dict[str, Any]] = (),
    stop: str | None = None,
    usage: dict[str, Any] | None = None,
    pings: bool = True,
) -> list[tuple[str, Any]]:
    """(event name, data) pairs for a Messages stream."""
    u = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    u.update(usage or {})
    start_usage = {k: v for k, v in u.items() if k != "output_tokens"} | {"output_tokens": 1}
    out: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                            "model": "fake", "content": [], "stop_reason": None, "usage": start_usage}})
    ]
    if pings:
        out.append(("ping", {"type": "ping"}))
    index = 0
    thinking = list(thinking)
    if thinking:
        out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}))
        for piece in thinking:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}))
        if signature:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    text = list(text)
    if text:
        out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
        for piece in text:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    calls = list(tool_calls)
    for call in calls:
        out.append(("content_block_start", {"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}}))
        frags = call.get("arguments", [])
        for frag in [frags] if isinstance(frags, str) else frags:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": frag}}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop or ("tool_use" if calls else "end_turn"), "stop_sequence": None},
                "usage": {"output_tokens": u["output_tokens"]}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return out


# ---------------------------------------------------------------- the server


class FakeProvider:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.probes: list[Recorded] = []  # window probes (PROBE_PATHS): apart, so requests[0] is the first API call
        self.disconnects = 0
        self.disconnected_at: list[tuple[float, str]] = []  # (time.monotonic(), the request's path), in order
        self.dripped = 0  # bytes sent by Drip steps
        self.client_disconnected = asyncio.Event()
        self._request_came = asyncio.Event()
        self.dripped = 0  # bytes a Drip step sent
        self.left_early = False  # the client went away while a Drip step still had more to send
        self._scripts: deque[tuple[str | None, list[Any]]] = deque()
        # Optional: answer by content (e.g. every summary request), before the scripted queue.
        self.responder: Callable[[Recorded], list[Any] | None] | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    async def until_requests(self, count: int) -> None:
        """Until `count` API requests have come in (a wait on their arrival, not a poll)."""
        async with asyncio.timeout(30):
            while len(self.requests) < count:
                self._request_came.clear()
                await self._request_came.wait()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeProvider:
        self._server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    # -- scripting

    def enqueue(self, steps: list[Any], path: str | None = None) -> None:
        self._scripts.append((path, steps))

    def script_sse(self, frames: list[bytes], *, path: str | None = None, **fault: Any) -> None:
        self.enqueue(self.sse_steps(frames, **fault), path)

    @staticmethod
    def sse_steps(frames: list[bytes], *, drop_after: int | None = None, terminal: bool = True,
                  hang_after: int | None = None, split: int | None = None,
                  gate: asyncio.Event | None = None, gate_after: int = 1,
                  drip_after: int | None = None, drip: bytes = b": ping\n\n", every: float = 0.05,
                  gap: float = 0.0) -> list[Any]:
        """Serve SSE frames; `drop_after` resets after N frames, `terminal=False` ends cleanly
        without the last frame (close-delimited), `split` writes every frame in N-byte pieces,
        `hang_after` / `drip_after` go silent / send only `drip` (every `every` s) after N frames,
        `gap` sleeps that long before every frame after the first."""
        steps: list[Any] = [Status(200, SSE_HEADERS, "chunked" if terminal or drop_after is not None else "close")]
        if not terminal:
            frames = frames[:-1]
        for i, frame in enumerate(frames):
            if drop_after is not None and i == drop_after:
                steps.append(Reset())
                break
            if hang_after is not None and i == hang_after:
                steps.append(Hang())
                break
            if drip_after is not None and i == drip_after:
                steps.append(Drip(drip, every))
                break
            if gap and i:
                steps.append(Sleep(gap))
            if gate is not None and i == gate_after:
                steps.append(Gate(gate))
            if split:
                steps.extend(Send(frame[j:j + split]) for j in range(0, len(frame), split))
            else:
                steps.append(Send(frame))
        return steps

    def script_openai(self, text: Iterable[str] = (), *, chunks: list[Any] | None = None, **kw: Any) -> None:
        """OpenAI reply from `openai_chunks(text, ...)` or explicit `chunks`; fault keywords as in script_sse."""
        fault = {k: kw.pop(k) for k in _FAULT_KEYS if k in kw}
        data = chunks if chunks is not None else openai_chunks(text, **kw)
        self.script_sse([sse_frame(c) for c in data], **fault)

    def script_anthropic(self, text: Iterable[str] = (), *, events: list[tuple[str, Any]] | None = None, **kw: Any) -> None:
        fault = {k: kw.pop(k) for k in _FAULT_KEYS if k in kw}
        data = events if events is not None else anthropic_events(text, **kw)
        self.script_sse([sse_frame(d, e) for e, d in data], **fault)

    def script_responses(self, text: Iterable[str] = (), *, events: list[tuple[str, Any]] | None = None,
                         **kw: Any) -> None:
        """An OpenAI Responses API reply from `tests.fake_responses.responses_events(text, ...)` or
        explicit `events`; fault keywords as in script_sse."""
        from tests.fake_responses import responses_events

        fault = {k: kw.pop(k) for k in _FAULT_KEYS if k in kw}
        data = events if events is not None else responses_events(text, **kw)
        self.script_sse([sse_frame(d, e) for e, d in data], **fault)

    def openai_reply(self, text: Iterable[str] = (), **kw: Any) -> list[Any]:
        """The steps of an OpenAI streamed reply, for a `responder` to return."""
        return self.sse_steps([sse_frame(c) for c in openai_chunks(text, **kw)])

    def script_status(self, code: int, body: Any = None, headers: dict[str, str] | None = None, path: str | None = None) -> None:
        raw = b"" if body is None else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        self.enqueue([Status(code, hdrs, "close"), Send(raw)], path)

    def script_json(self, body: Any, path: str | None = None) -> None:
        self.script_status(200, body, path=path)

    def script_hang(self, path: str | None = None) -> None:
        """Accept the request and never answer (not even headers)."""
        self.enqueue([Hang()], path)

    # -- serving

    def _next_script(self, path: str) -> list[Any]:
        for i, (want, steps) in enumerate(self._scripts):
            if want == path or want is None and path not in PROBE_PATHS:
                del self._scripts[i]
                return steps
        return [Status(404, {"Content-Type": "application/json"}, "close"),
                Send(b'{"error":{"message":"no script for this request","type":"not_found"}}')]

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *lines = head.decode("latin-1").split("\r\n")
        method, path, _ = line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
        raw = await reader.readexactly(int(headers.get("content-length", 0) or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = Recorded(method, path, headers, body, time.monotonic(), int(time.time() * 1000))
        (self.probes if path in PROBE_PATHS else self.requests).append(recorded)
        self._request_came.set()
        chunked = False
        steps = self.responder(recorded) if self.responder else None
        for step in steps if steps is not None else self._next_script(path):
            if isinstance(step, Status):
                chunked = step.framing == "chunked"
                extra = "".join(f"{k}: {v}\r\n" for k, v in step.headers.items())
                framing = "Transfer-Encoding: chunked\r\n" if chunked else ""
                writer.write(f"HTTP/1.1 {step.code} Fake\r\n{extra}{framing}Connection: close\r\n\r\n".encode())
            elif isinstance(step, Send):
                data = step.data(self.requests[-1]) if callable(step.data) else step.data
                writer.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Gate):
                await writer.drain()
                await step.event.wait()
            elif isinstance(step, Hang):
                await writer.drain()
                try:
                    await asyncio.wait_for(reader.read(), step.limit)  # returns b"" when the client closes
                except TimeoutError:
                    pass
                self._disconnected(path)
                return
            elif isinstance(step, Drip):
                await self._drip(reader, writer, step, chunked, path)
                return
            elif isinstance(step, Reset):
                await writer.drain()
                writer.transport.abort()
                return
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def _drip(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, step: Drip, chunked: bool,
                    path: str = "") -> None:
        gone = asyncio.ensure_future(reader.read())  # b"" when the client closes
        deadline = time.monotonic() + step.limit
        try:
            while not gone.done() and time.monotonic() < deadline:
                if step.max_bytes is not None and self.dripped >= step.max_bytes:
                    if chunked:
                        writer.write(b"0\r\n\r\n")
                    await writer.drain()
                    return
                writer.write(b"%x\r\n%s\r\n" % (len(step.data), step.data) if chunked else step.data)
                self.dripped += len(step.data)
                await writer.drain()
                await asyncio.wait({gone}, timeout=step.every)
            self.left_early = gone.done()
        except ConnectionError:
            self.left_early = True
            raise
        finally:
            gone.cancel()
            self._disconnected(path)

    def _disconnected(self, path: str) -> None:
        self.disconnects += 1
        self.disconnected_at.append((time.monotonic(), path))
        self.client_disconnected.set()


class FakeProxy(FakeProvider):
    """A loopback HTTP proxy that answers by script (default: 502 from the proxy itself).

    A forward request arrives as `POST http://host/path`, a tunnel as `CONNECT host:443`; both are
    recorded in `requests` (with their headers, so a test sees whether a key reached the proxy).
    It never connects anywhere: a scripted reply stands in for the origin server."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _next_script(self, path: str) -> list[Any]:
        for i, (want, steps) in enumerate(self._scripts):
            if want is None or want == path:
                del self._scripts[i]
                return steps
        return [Status(502, {"Content-Type": "text/html"}, "close"),
                Send(b"<html><body><h1>502 Bad Gateway</h1>fake proxy</body></html>")]
