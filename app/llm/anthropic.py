"""Anthropic Messages streaming."""

from __future__ import annotations

from collections.abc import AsyncIterator

from treechat.bounded_json import RawJson
from treechat.storage.json_types import JsonObject
from treechat.storage.model import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    StopReason,
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
from .types import LlmContext, ModelInfo, StreamEvent, StreamOptions
from .wire import chunk_json, set_arguments, token_count, tool_call_at

API = PI_NAMES["anthropic"]  # the messages' `api`
VERSION = "2023-06-01"
_STOP: dict[str, StopReason] = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
         "tool_use": "toolUse", "model_context_window_exceeded": "length"}
_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def _blocks(content: str | list[ContentBlock]) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[JsonObject] = []
    for b in content:
        if isinstance(b, TextContent) and b.text:
            out.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageContent):
            out.append({"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}})
    return out


def _assistant_blocks(msg: AssistantMessage) -> list[JsonObject]:
    out: list[JsonObject] = []
    for b in msg.content:
        if isinstance(b, TextContent) and b.text:
            out.append({"type": "text", "text": b.text})
        elif isinstance(b, ThinkingContent):
            # a signature is Anthropic's only from its own replies (another protocol's, e.g. an
            # OpenAI reasoning item, would be refused): the rest is replayed as plain text
            signature = getattr(b, "thinkingSignature", None) if msg.api in (API, "") else None
            if getattr(b, "redacted", False) and signature:
                out.append({"type": "redacted_thinking", "data": signature})
            elif signature:
                out.append({"type": "thinking", "thinking": b.thinking, "signature": signature})
            elif b.thinking:  # unsigned (aborted before the signature): replay as plain text
                out.append({"type": "text", "text": b.thinking})
        elif isinstance(b, ToolCall):
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.arguments})
    return out


def build_body(model: ModelInfo, context: LlmContext, options: StreamOptions) -> JsonObject:
    messages: list[JsonObject] = []
    results: list[JsonObject] | None = None  # the last message's content, when it holds tool results only
    for msg in prepare_messages(context.messages):
        if msg.role == "user":
            blocks = _blocks(msg.content)
            if blocks:
                messages.append({"role": "user", "content": blocks})
                results = None
        elif msg.role == "assistant":
            blocks = _assistant_blocks(msg)
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
                results = None
        elif msg.role == "toolResult":
            result: JsonObject = {
                "type": "tool_result",
                "tool_use_id": msg.tool_call_id,
                "content": _blocks(msg.content) or [{"type": "text", "text": "(no output)"}],
                "is_error": msg.is_error,
            }
            # all results of one assistant turn go into one user message
            if results is not None:
                results.append(result)
            else:
                results = [result]
                messages.append({"role": "user", "content": results})
    base_max = options.max_tokens or min(model.max_tokens, 32000)
    body: JsonObject = {"model": model.id, "max_tokens": base_max, "messages": messages, "stream": True}
    if context.system_prompt:
        body["system"] = context.system_prompt
    if context.tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in context.tools]
    level = options.thinking_level
    if model.reasoning and level and level != "off":
        if model.compat.adaptive_thinking:
            effort = "max" if level == "xhigh" and model.compat.supports_xhigh else _EFFORT[level]
            body["thinking"] = {"type": "adaptive"}
            body["output_config"] = {"effort": effort}
        else:
            budget = _BUDGETS.get(level, 8192)
            max_tokens = min(base_max + budget, model.max_tokens)
            if max_tokens <= budget:
                budget = max(1024, max_tokens - 1024)
            body["max_tokens"] = max_tokens
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return body


class AnthropicParser:
    def __init__(self, model: ModelInfo):
        self.model = model
        self.message = AssistantMessage(api=API, provider=model.provider, model=model.id)
        self.finished = False
        self.pieces = Pieces()  # deltas, joined into the blocks once per read (http_stream)
        self._blocks: dict[int, int] = {}  # wire index -> content index
        self._args: dict[int, list[str]] = {}  # content index -> raw tool input JSON, in pieces
        self._usage = Usage()
        self._stop: str | None = None

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        data = chunk_json(sse, self.model.provider)
        if not isinstance(data, dict):
            return []
        kind = data.get("type") or sse.event
        if kind == "error":
            raise classify_stream_error(data, provider=self.model.provider)
        if kind == "message_start":
            self._take_usage((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            return self._start_block(data.get("index", 0), data.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(data.get("index", 0), data.get("delta") or {})
        elif kind == "content_block_stop":
            idx = self._blocks.get(data.get("index", 0))
            if idx is not None and idx in self._args:
                set_arguments(tool_call_at(self.message, idx), "".join(self._args.pop(idx)))
                return [StreamEvent("toolcall_end", self.message, "", idx)]
        elif kind == "message_delta":
            self._stop = (data.get("delta") or {}).get("stop_reason") or self._stop
            self._take_usage(data.get("usage") or {})
        elif kind == "message_stop":
            self.finished = True
        return []

    def _start_block(self, wire: RawJson, block: RawJson) -> list[StreamEvent]:
        if not isinstance(block, dict):
            raise malformed(self.model.provider, "a content block", block)
        btype = block.get("type")
        if btype == "text":
            new: TextContent | ThinkingContent | ToolCall = TextContent(text=self._text(block.get("text"), "a text block"))
        elif btype == "thinking":
            new = ThinkingContent(thinking=self._text(block.get("thinking"), "a thinking block"))
        elif btype == "redacted_thinking":
            # the signature travels back to Anthropic as it came (an extra field the model keeps)
            new = ThinkingContent.model_validate({"thinking": "[Reasoning redacted]",
                                                  "thinkingSignature": block.get("data"), "redacted": True})
        elif btype == "tool_use":
            new = ToolCall(id=self._text(block.get("id"), "a tool call's id") or f"toolu_{wire}",
                           name=self._text(block.get("name"), "a tool's name"), arguments={})
            self._args[len(self.message.content)] = []
        else:
            return []
        self.message.content.append(new)
        self._blocks[wire] = len(self.message.content) - 1
        return []

    def _text(self, value: RawJson, what: str) -> str:
        return text_of(value, provider=self.model.provider, what=what)

    def _delta(self, wire: RawJson, delta: RawJson) -> list[StreamEvent]:
        idx = self._blocks.get(wire)
        if idx is None:
            return []
        if not isinstance(delta, dict):
            raise malformed(self.model.provider, "a delta", delta)
        block = self.message.content[idx]
        dtype = delta.get("type")
        if dtype == "text_delta" and isinstance(block, TextContent):
            text = self._text(delta.get("text"), "text")
            self.pieces.add(block, "text", text)
            return [StreamEvent("text_delta", self.message, text, idx)]
        if dtype == "thinking_delta" and isinstance(block, ThinkingContent):
            thinking = self._text(delta.get("thinking"), "thinking")
            self.pieces.add(block, "thinking", thinking)
            return [StreamEvent("thinking_delta", self.message, thinking, idx)]
        if dtype == "signature_delta" and isinstance(block, ThinkingContent):
            signature = (getattr(block, "thinkingSignature", None) or "") + self._text(delta.get("signature"), "a signature")
            setattr(block, "thinkingSignature", signature)  # noqa: B010  (an extra field of the model)
        elif dtype == "input_json_delta" and idx in self._args:
            piece = self._text(delta.get("partial_json"), "a tool's arguments")
            self._args[idx].append(piece)
            return [StreamEvent("toolcall_delta", self.message, piece, idx)]
        return []

    def _take_usage(self, raw: RawJson) -> None:
        # message_delta counts are cumulative; proxies omit fields there, so only overwrite what is given
        for wire, attr in (("input_tokens", "input"), ("output_tokens", "output"),
                           ("cache_read_input_tokens", "cache_read"), ("cache_creation_input_tokens", "cache_write")):
            value = token_count(raw.get(wire)) if isinstance(raw, dict) else None
            if value is not None:  # counts only; anything else is left out
                setattr(self._usage, attr, value)
        self.message.usage = with_cost(self.model, self._usage.model_copy(deep=True))

    def finish(self) -> AssistantMessage:
        for idx, raw in list(self._args.items()):
            set_arguments(tool_call_at(self.message, idx), "".join(raw))
        if self._stop in ("refusal", "sensitive"):
            self.message.stop_reason = "error"
            self.message.error_message = f"{self.model.provider} declined to answer (stop reason {self._stop})."
        else:
            self.message.stop_reason = _STOP.get(self._stop or "end_turn", "stop")
        return snapshot(self.message)


def stream_anthropic(
    model: ModelInfo, context: LlmContext, options: StreamOptions, signal: AbortSignal | None = None
) -> AsyncIterator[StreamEvent]:
    headers = {"content-type": "application/json", "anthropic-version": VERSION, "accept": "text/event-stream"}
    if options.api_key:
        headers["x-api-key"] = options.api_key
    base = model.base_url.rstrip("/")
    url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
    return run_http_stream(
        model=model, url=url, headers=headers, body=build_body(model, context, options),
        parser=AnthropicParser(model), options=options, signal=signal,
    )
