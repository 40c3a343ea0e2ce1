"""OpenAI Responses API streaming (`POST {base_url}/responses`): the protocol OpenAI serves its
codex models through (and the only one for them), spoken by some local servers too.

**The request** (a provider or model with `api = "openai-responses"`): the system prompt as
`instructions`; the conversation as `input` items: user messages (`input_text`, `input_image`),
the assistant's turns as the items it produced (`reasoning`, `message` with `output_text`,
`function_call` with its `call_id`), and tool results as `function_call_output` items naming that
`call_id` (images a tool returned follow as a user message, as with Chat Completions); function
tools (`strict: false`: our schemas are not written for strict mode); `max_output_tokens` when one
is set. Nothing is kept on OpenAI's side (`store: false`): for a reasoning model the request asks
for its reasoning encrypted (`include: ["reasoning.encrypted_content"]`), the thinking level as
`reasoning.effort` and, unless thinking is off, a summary (`reasoning.summary: "auto"`).

**Reasoning across turns**: the reasoning item of `response.output_item.done` (with its
`encrypted_content`) is kept as the JSON of the thinking block's `thinkingSignature`, as Pi keeps
it (and as Anthropic's signature is kept), so it is stored with the message and sent back, without
its id (nothing is stored server-side to refer to), in the next request of the same model.

**The documented events handled** (the API reference, "Responses streaming events"):
`response.output_item.added` / `response.output_item.done` (items of type `reasoning`, `message`,
`function_call`; an item that arrives only whole, as a local server or the unstreamed answer may
send it, is taken from `.done`), `response.output_text.delta`, `response.refusal.delta` (shown as
text), `response.reasoning_summary_text.delta` (shown as thinking; parts apart by a blank line),
`response.reasoning_text.delta` (raw reasoning, from open-weight models), `response.function_call_
arguments.delta` / `.done`, and the ends: `response.completed` (with `usage`),
`response.incomplete` (`incomplete_details.reason`: `max_output_tokens` is a reply cut for length,
`content_filter` an error), `response.failed` (`response.error`) and `error`. The rest
(`response.created`, `.in_progress`, `.queued`, `content_part.*`, `*.done` of text and summaries,
annotations, hosted tools' progress) carry nothing a reply needs.

Bounds, retries, proxies, redaction and abort are the shared runner's (`http_stream.py`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Literal

from treechat.bounded_json import RawJson, RawObject
from treechat.storage.json_types import JsonObject
from treechat.storage.model import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

from .abort import AbortSignal
from .apis import PI_NAMES
from .catalog import with_cost
from .errors import classify_stream_error, malformed, text_of
from .http_stream import Pieces, run_http_stream, snapshot
from .sse import SSEEvent
from .transform import prepare_messages
from .types import LlmContext, LlmMessage, ModelInfo, StreamEvent, StreamOptions
from .unstreamed import ResponsesUnstreamed
from .wire import (
    bearer_headers,
    chunk_json,
    data_url,
    reasoning_effort,
    set_arguments,
    token_count,
    tool_call_at,
    tool_text,
)

API = PI_NAMES["openai-responses"]  # the messages' `api`
SIGNATURE = "thinkingSignature"  # the thinking block's extra field holding the reasoning item (JSON)
_TOOL_IMAGES = "Attached image(s) from tool result:"


# ---------------------------------------------------------------- the request


def call_id(tool_call_id: str) -> str:
    """The `call_id` of a tool call: Pi writes "call_id|item_id" for this protocol."""
    return tool_call_id.partition("|")[0]


def _user_item(content: str | list[ContentBlock]) -> JsonObject | None:
    if isinstance(content, str):
        return {"role": "user", "content": [{"type": "input_text", "text": content}]} if content else None
    parts: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "input_image", "image_url": data_url(block)})
    return {"role": "user", "content": parts} if parts else None


def reasoning_item(block: ThinkingContent, message: AssistantMessage, model: ModelInfo) -> JsonObject | None:
    """The reasoning item a thinking block carries, to send back: only to the model that wrote it
    (its encrypted content is that model's), and only with that content (without it, an item is
    a reference to what `store: false` never stored)."""
    signature = getattr(block, SIGNATURE, None)
    if (not isinstance(signature, str) or message.api != API or message.provider != model.provider
            or message.model != model.id):
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(item, dict) or item.get("type") != "reasoning" or not isinstance(item.get("encrypted_content"), str):
        return None
    summary = item.get("summary")
    return {"type": "reasoning", "summary": summary if isinstance(summary, list) else [],
            "encrypted_content": item["encrypted_content"]}


def _assistant_items(message: AssistantMessage, model: ModelInfo) -> list[JsonObject]:
    items: list[JsonObject] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            item = reasoning_item(block, message, model)
            if item is not None:
                items.append(item)
        elif isinstance(block, TextContent) and block.text:
            items.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": block.text}]})
        elif isinstance(block, ToolCall):
            items.append({"type": "function_call", "call_id": call_id(block.id), "name": block.name,
                          "arguments": json.dumps(block.arguments)})
    return items


def input_items(messages: list[LlmMessage], model: ModelInfo) -> list[JsonObject]:
    items: list[JsonObject] = []
    images: list[JsonObject] = []  # what tool results returned: a user message after them
    for msg in prepare_messages(messages):
        if images and msg.role != "toolResult":
            items.append({"role": "user", "content": [{"type": "input_text", "text": _TOOL_IMAGES}, *images]})
            images = []
        if msg.role == "user":
            item = _user_item(msg.content)
            if item is not None:
                items.append(item)
        elif msg.role == "assistant":
            items += _assistant_items(msg, model)
        elif msg.role == "toolResult":
            shown = [b for b in msg.content if isinstance(b, ImageContent)]
            text = tool_text(msg.content) if not shown or any(isinstance(b, TextContent) for b in msg.content) else (
                "(see attached image)")
            items.append({"type": "function_call_output", "call_id": call_id(msg.tool_call_id), "output": text})
            images += [{"type": "input_image", "image_url": data_url(b)} for b in shown]
    if images:
        items.append({"role": "user", "content": [{"type": "input_text", "text": _TOOL_IMAGES}, *images]})
    return items


def build_body(model: ModelInfo, context: LlmContext, options: StreamOptions) -> JsonObject:
    body: JsonObject = {"model": model.id, "input": input_items(context.messages, model), "stream": True,
                      "store": False}
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters, "strict": False} for t in context.tools]
    max_tokens = options.max_tokens or (model.max_tokens if model.send_max_tokens else None)
    if max_tokens:
        body["max_output_tokens"] = max_tokens
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        effort = reasoning_effort(model, options.thinking_level)
        if effort:  # and a summary only then: thinking off shows none (an organisation OpenAI has not verified is refused one)
            body["reasoning"] = {"effort": effort, "summary": "auto"}
    return body


# ---------------------------------------------------------------- the stream


class ResponsesParser:
    def __init__(self, model: ModelInfo):
        self.model = model
        self.message = AssistantMessage(api=API, provider=model.provider, model=model.id)
        self.finished = False
        self.pieces = Pieces()  # deltas, joined into the blocks once per read (http_stream)
        self._blocks: dict[int | str, int] = {}  # an output item (its output_index, and its id) -> content index
        self._args: dict[int, list[str]] = {}  # content index -> a tool call's raw arguments, in pieces
        self._streamed: set[int] = set()  # content indices whose text came as deltas
        self._parts: dict[int, int] = {}  # content index -> the summary part its last delta was of
        self._stop: Literal["stop", "length", "filtered"] = "stop"

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        data = chunk_json(sse, self.model.provider)
        if not isinstance(data, dict):
            return []
        kind = data.get("type") or sse.event
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return self._delta(data, TextContent, "text", "text_delta")
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._delta(data, ThinkingContent, "thinking", "thinking_delta")
        if kind == "response.function_call_arguments.delta":
            return self._arguments(data)
        if kind == "response.function_call_arguments.done":
            index = self._find(data)
            if index in self._args and isinstance(data.get("arguments"), str):
                self._args[index] = [data["arguments"]]  # the whole text: what the deltas should have made
            return []
        if kind == "response.output_item.added":
            self._block(data, self._item(data))
            return []
        if kind == "response.output_item.done":
            return self._item_done(data, self._item(data))
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._end(kind, data.get("response"))
        elif kind == "error":
            raise classify_stream_error(data, provider=self.model.provider)
        return []

    # -- items and the blocks they become

    def _item(self, data: RawObject) -> RawObject:
        item = data.get("item")
        if not isinstance(item, dict):
            raise malformed(self.model.provider, "an output item", item)
        return item

    def _text(self, value: RawJson, what: str) -> str:
        return text_of(value, provider=self.model.provider, what=what)

    @staticmethod
    def _keys(data: RawObject, item: RawObject | None = None) -> list[int | str]:
        """What names an output item: its output_index and its id (an event carries either or both)."""
        keys: list[int | str] = [data["output_index"]] if isinstance(data.get("output_index"), int) else []
        for ident in (data.get("item_id"), (item or {}).get("id")):
            if isinstance(ident, str) and ident and ident not in keys:
                keys.append(ident)
        return keys

    def _find(self, data: RawObject, item: RawObject | None = None) -> int | None:
        return next((self._blocks[k] for k in self._keys(data, item) if k in self._blocks), None)

    def _block(self, data: RawObject, item: RawObject) -> int | None:
        """The content index of an output item's block, made when first seen (None: an item a
        reply does not show, such as a hosted tool's call)."""
        found = self._find(data, item)
        if found is not None:
            return found
        kind = item.get("type")
        if kind == "reasoning":
            new: TextContent | ThinkingContent | ToolCall = ThinkingContent(thinking="")
        elif kind == "message":
            new = TextContent(text="")
        elif kind == "function_call":
            ident = self._text(item.get("call_id"), "a tool call's id") or self._text(item.get("id"), "an item's id")
            new = ToolCall(id=ident or f"call_{len(self.message.content)}", name=self._text(item.get("name"), "a tool's name"))
        else:
            return None
        self.message.content.append(new)
        index = len(self.message.content) - 1
        if isinstance(new, ToolCall):
            self._args[index] = [self._text(item.get("arguments"), "a tool's arguments")]
        for key in self._keys(data, item):
            self._blocks[key] = index
        return index

    def _delta(self, data: RawObject, cls: type[TextContent | ThinkingContent], attr: str,
               kind: Literal["text_delta", "thinking_delta"]) -> list[StreamEvent]:
        text = self._text(data.get("delta"), "a delta")
        index = self._find(data)
        if index is None:  # a delta before (or without) its item: a block of its own, found by the same keys
            index = self._block(data, {"type": "message" if cls is TextContent else "reasoning"})
        if index is None or not isinstance(self.message.content[index], cls):
            return []  # text for an item of another kind (a tool call's): nothing to show it as
        part = data.get("summary_index")
        if isinstance(part, int):
            if self._parts.get(index, part) != part and text:
                text = "\n\n" + text  # the next part of a summary: a paragraph of its own
            self._parts[index] = part
        if not text:
            return []
        self._streamed.add(index)
        self.pieces.add(self.message.content[index], attr, text)
        return [StreamEvent(kind, self.message, text, index)]

    def _arguments(self, data: RawObject) -> list[StreamEvent]:
        piece = self._text(data.get("delta"), "a tool's arguments")
        index = self._find(data)
        if index is None or index not in self._args or not piece:
            return []
        self._args[index].append(piece)
        return [StreamEvent("toolcall_delta", self.message, piece, index)]

    def _item_done(self, data: RawObject, item: RawObject) -> list[StreamEvent]:
        index = self._block(data, item)
        if index is None:
            return []
        block = self.message.content[index]
        if isinstance(block, ToolCall):
            if isinstance(item.get("arguments"), str) and item["arguments"]:
                self._args[index] = [item["arguments"]]
            block.name = block.name or self._text(item.get("name"), "a tool's name")
            set_arguments(block, "".join(self._args.pop(index, [])))
            return [StreamEvent("toolcall_end", self.message, "", index)]
        events: list[StreamEvent] = []
        if index not in self._streamed:  # the item came whole: its text is the reply's
            whole = _whole_text(item, self.model.provider)
            if whole:
                attr = "text" if isinstance(block, TextContent) else "thinking"
                self.pieces.add(block, attr, whole)
                kind: Literal["text_delta", "thinking_delta"] = "text_delta" if attr == "text" else "thinking_delta"
                events.append(StreamEvent(kind, self.message, whole, index))
        if isinstance(block, ThinkingContent) and isinstance(item.get("encrypted_content"), str):
            setattr(block, SIGNATURE, json.dumps(item, ensure_ascii=False, separators=(",", ":")))
        return events

    # -- the end

    def _end(self, kind: str, response: RawJson) -> None:
        if not isinstance(response, dict):
            response = {}
        self._usage(response.get("usage"))
        if kind == "response.failed":
            error = response.get("error")
            raise classify_stream_error({"error": error} if isinstance(error, dict) else "the response failed",
                                        provider=self.model.provider)
        self.finished = True
        if kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self._stop = "filtered" if reason == "content_filter" else "length"

    def _usage(self, raw: RawJson) -> None:
        """input_tokens counts the cached ones (kept apart, as cache_read) and output_tokens the
        reasoning ones (output, as every provider's reasoning is)."""
        if not isinstance(raw, dict):
            return
        details = raw.get("input_tokens_details")
        cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else None
        given = token_count(raw.get("input_tokens"))
        usage = Usage(input=max(0, (given or 0) - (cached or 0)), output=token_count(raw.get("output_tokens")) or 0,
                      cache_read=cached or 0)
        self.message.usage = with_cost(self.model, usage)

    def finish(self) -> AssistantMessage:
        for index, raw in list(self._args.items()):  # a call whose item never said it was done
            set_arguments(tool_call_at(self.message, index), "".join(raw))
        self._args.clear()
        if self._stop == "filtered":
            self.message.stop_reason = "error"
            self.message.error_message = f"{self.model.provider} stopped the reply with its content filter."
        elif self._stop == "length":
            self.message.stop_reason = "length"
        else:
            calls = any(isinstance(b, ToolCall) for b in self.message.content)
            self.message.stop_reason = "toolUse" if calls else "stop"
        return snapshot(self.message)


def _whole_text(item: RawObject, provider: str) -> str:
    """The text of an item that came whole: a message's output text (and refusal), a reasoning
    item's summary (parts apart by a blank line) or else its raw reasoning text."""
    def texts(parts: RawJson, *fields: str) -> list[str]:
        if not isinstance(parts, list):
            return []
        return [text_of(p.get(f), provider=provider, what="an item's text") for p in parts if isinstance(p, dict)
                for f in fields if isinstance(p.get(f), str)]

    if item.get("type") == "message":
        return "".join(texts(item.get("content"), "text", "refusal"))
    return "\n\n".join(texts(item.get("summary"), "text")) or "".join(texts(item.get("content"), "text"))


def stream_responses(
    model: ModelInfo, context: LlmContext, options: StreamOptions, signal: AbortSignal | None = None
) -> AsyncIterator[StreamEvent]:
    return run_http_stream(
        model=model, url=model.base_url.rstrip("/") + "/responses", headers=bearer_headers(options.api_key),
        body=build_body(model, context, options), parser=ResponsesParser(model), options=options, signal=signal,
        unstreamed=ResponsesUnstreamed(),
    )

