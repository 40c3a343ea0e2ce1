"""When a stream ends with no data: ask once more without streaming, and say what the server said.

Some servers fail after sending `200` and the event-stream headers: llama-cpp-python turns every
exception in a streamed completion (a prompt longer than its window, a chat template that cannot
render the messages) into a stream that just ends. Retrying the stream can never help, and the
reason is only in the server's log. The same request without `stream` gets the server's own error
(`400 This model's maximum context length is 2048 tokens…`), or a whole reply when streaming
alone was broken: the error is shown (an overflow is handled like any other: compact, retry once),
the reply is used. The answer is bounded like every read (`MAX_REPLY_BYTES`, and the stream's
first-byte wait).
"""

from __future__ import annotations

import json
from typing import Protocol

import httpx

from treechat import bounded_json
from treechat.bounded_json import RawJson, RawObject
from treechat.storage.json_types import JsonObject

from .content_encoding import BodyEncodingError, body_chunks
from .errors import ProviderError, classify_http_error, error_body_message
from .sse import SSEEvent

MAX_REPLY_BYTES = 10_000_000  # a whole reply, or an error body: more is not an answer


class Unstreamed(Protocol):
    """How one wire protocol asks without streaming, and reads the answer as the stream it stands for."""

    def body(self, streamed: JsonObject) -> JsonObject: ...

    def events(self, reply: RawJson) -> list[SSEEvent] | None:
        """The reply as stream events the protocol's parser takes; None: not a reply."""


class OpenAIUnstreamed:
    """Chat Completions: `stream: false`, and a `chat.completion` read as one chunk."""

    def body(self, streamed: JsonObject) -> JsonObject:
        return {k: v for k, v in streamed.items() if k not in ("stream", "stream_options")} | {"stream": False}

    def events(self, reply: RawJson) -> list[SSEEvent] | None:
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list) or not reply["choices"]:
            return None
        choice = reply["choices"][0]
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            return None
        message = choice["message"]
        delta: RawObject = {k: v for k, v in message.items() if k != "tool_calls"}
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(calls) if isinstance(c, dict)]
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason") or "stop"}],
                 "usage": reply.get("usage")}
        return [SSEEvent("message", json.dumps(chunk)), SSEEvent("message", "[DONE]")]


class ResponsesUnstreamed:
    """The Responses API: `stream: false`, and a `response` read as the events that end a stream:
    each output item done, then the response completed (or incomplete, or failed)."""

    def body(self, streamed: JsonObject) -> JsonObject:
        return streamed | {"stream": False}

    def events(self, reply: RawJson) -> list[SSEEvent] | None:
        if not isinstance(reply, dict) or not isinstance(reply.get("output"), list):
            return None
        events = [SSEEvent("response.output_item.done", json.dumps(
            {"type": "response.output_item.done", "output_index": i, "item": item}))
            for i, item in enumerate(reply["output"]) if isinstance(item, dict)]
        status = reply.get("status")
        end = f"response.{status}" if status in ("incomplete", "failed") else "response.completed"
        return [*events, SSEEvent(end, json.dumps({"type": end, "response": reply}))]


async def _whole(response: httpx.Response) -> bytes:
    data = bytearray()
    async for chunk in body_chunks(response):  # (decompressed a piece at a time)
        data += chunk
        if len(data) > MAX_REPLY_BYTES:
            break
    return bytes(data[:MAX_REPLY_BYTES])


async def _send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    # A server whose stream failed can leave its kept-alive connection dead (llama-cpp-python: the
    # next request on it gets no answer at all): one failure to send goes again on a new connection.
    try:
        return await client.send(request, stream=True)
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        return await client.send(request, stream=True)


async def ask_unstreamed(client: httpx.AsyncClient, url: str, headers: dict[str, str], body: bytes,
                         spec: Unstreamed, *, provider: str, model: str, base_url: str) -> list[SSEEvent]:
    """The stream answered nothing: the same request once without streaming. Returns the reply as
    stream events, or raises the server's own reason as a ProviderError."""
    empty = f"The stream from {provider} ended with no data"
    try:
        response = await _send(client, client.build_request(
            "POST", url, headers={**headers, "Accept": "application/json"}, content=body))
        try:
            text = (await _whole(response)).decode("utf-8", errors="replace")
        finally:
            await response.aclose()
    except (httpx.HTTPError, BodyEncodingError) as err:
        raise ProviderError("transport", f"{empty}, and asking again without streaming failed too "
                            f"({type(err).__name__}); check the server's log.", retryable=False) from None
    if response.status_code >= 300:
        error = classify_http_error(response.status_code, response.headers, text, provider=provider, model=model,
                                    base_url=base_url)
        if error.kind in ("overflow", "auth", "billing", "not_found"):
            raise error  # its own sentence says what to do (an overflow: compaction reads the limit)
        detail = error_body_message(text)[0] or "no reason given"
        raise ProviderError(error.kind, f"{empty}; asked again without streaming, it answered HTTP "
                            f"{response.status_code}: {detail}", status=response.status_code, retryable=False)
    try:
        events = spec.events(bounded_json.loads(text))
    except ValueError:
        events = None
    if not events:
        raise ProviderError("protocol", f"{empty}, and without streaming it answered no reply either "
                            f"({' '.join(text.split())[:120] or 'an empty body'}); check the server's log.",
                            retryable=False)
    return events
