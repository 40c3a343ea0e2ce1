"""OpenAI Chat Completions streaming (OpenAI and the OpenAI-compatible family)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Literal
from urllib.parse import urlparse

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
from .unstreamed import OpenAIUnstreamed
from .wire import bearer_headers, chunk_json, data_url, reasoning_effort, set_arguments, tool_call_at, tool_text

API = PI_NAMES["openai"]  # the messages' `api`
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_FINISH: dict[str, StopReason] = {"stop": "stop", "end": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse",
           "model_context_window_exceeded": "length"}
_CallKey = tuple[str, RawJson]  # a tool call's fragments are told apart by ("i", index) or ("id", id)


def _user_content(content: str | list[ContentBlock]) -> str | list[JsonObject]:
    """A string unless the message carries an image: many servers' chat templates concatenate
    `content` as text and fail on a list of parts (llama-cpp-python: after the 200, so the stream
    just ends)."""
    if isinstance(content, str):
        return content
    if not any(isinstance(block, ImageContent) for block in content):
        return "\n".join(block.text for block in content if isinstance(block, TextContent))
    parts: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "image_url", "image_url": {"url": data_url(block)}})
    return parts


def _tool_images_message(images: list[JsonObject]) -> JsonObject:
    """A tool message carries text only: the images of the results before it follow as a user
    message (as Pi sends them)."""
    return {"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images]}


def build_body(model: ModelInfo, context: LlmContext, options: StreamOptions) -> JsonObject:
    messages: list[JsonObject] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    tool_images: list[JsonObject] = []  # images tool results returned (Chat Completions: a user message after them)
    for msg in prepare_messages(context.messages):
        if tool_images and msg.role != "toolResult":
            messages.append(_tool_images_message(tool_images))
            tool_images = []
        if msg.role == "user":
            messages.append({"role": "user", "content": _user_content(msg.content)})
        elif msg.role == "assistant":
            text = "".join(b.text for b in msg.content if isinstance(b, TextContent))
            calls: list[JsonObject] = [
                {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.arguments)}}
                for b in msg.content
                if isinstance(b, ToolCall)
            ]
            if not text and not calls:
                continue
            # "" rather than null beside tool calls: llama-cpp-python's request check refuses null
            entry: JsonObject = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
        elif msg.role == "toolResult":
            images = [b for b in msg.content if isinstance(b, ImageContent)]
            text = tool_text(msg.content) if not images or any(isinstance(b, TextContent) for b in msg.content) else (
                "(see attached image)")
            messages.append({"role": "tool", "tool_call_id": msg.tool_call_id, "content": text})
            tool_images += [{"type": "image_url", "image_url": {"url": data_url(b)}}
                            for b in images]
    if tool_images:
        messages.append(_tool_images_message(tool_images))
    body: JsonObject = {"model": model.id, "messages": messages, "stream": True}
    if model.compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if context.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in context.tools
        ]
    max_tokens = options.max_tokens or (model.max_tokens if model.send_max_tokens else None)
    if max_tokens:
        body[_max_tokens_field(model)] = max_tokens
    effort = reasoning_effort(model, options.thinking_level)
    if effort and model.compat.supports_reasoning_effort:
        body["reasoning_effort"] = effort
    return body


def _max_tokens_field(model: ModelInfo) -> str:
    """`max_tokens`, which every compatible server reads (Ollama reads nothing else), unless the
    host is OpenAI's own and the catalog says it wants `max_completion_tokens`."""
    field = model.compat.max_tokens_field
    host = (urlparse(model.base_url).hostname or "").lower()
    return field if host == "api.openai.com" or host.endswith(".openai.azure.com") else "max_tokens"


class OpenAIParser:
    def __init__(self, model: ModelInfo):
        self.model = model
        self.message = AssistantMessage(api=API, provider=model.provider, model=model.id)
        self.finished = False
        self.pieces = Pieces()  # deltas, joined into the blocks once per read (http_stream)
        self._finish_reason: str | None = None
        self._calls: dict[_CallKey, tuple[int, list[str]]] = {}  # fragment key -> (content index, raw argument pieces)
        self._last_call_key: _CallKey | None = None

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        if sse.data.strip() == "[DONE]":
            self.finished = True
            return []
        chunk = chunk_json(sse, self.model.provider)
        if not isinstance(chunk, dict):
            return []
        if chunk.get("error") or chunk.get("object") == "error":
            raise classify_stream_error(chunk.get("error") or chunk, provider=self.model.provider)
        events: list[StreamEvent] = []
        if chunk.get("usage"):
            self._counts(chunk["usage"])
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise malformed(self.model.provider, "choices", choices)
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, events)
        return events

    def _choice(self, choice: dict[str, RawJson], events: list[StreamEvent]) -> None:
        """The first choice of a chunk: its usage, deltas (thinking, text, tool calls) and finish."""
        if choice.get("usage"):  # Moonshot puts usage inside the choice
            self._counts(choice["usage"])
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise malformed(self.model.provider, "a delta", delta)
        for name in _REASONING_FIELDS:
            piece = text_of(delta.get(name), provider=self.model.provider, what=name)
            if piece:
                events.append(self._append(ThinkingContent, "thinking", piece, "thinking_delta"))
                break
        content = self._content(delta.get("content"))
        if content:
            events.append(self._append(TextContent, "text", content, "text_delta"))
        calls = delta.get("tool_calls") or []
        for frag in calls if isinstance(calls, list) else [calls]:
            events.append(self._tool_fragment(frag))
        reason = choice.get("finish_reason")
        if reason:
            if reason == "error":
                raise classify_stream_error(choice.get("error") or "finish_reason error", provider=self.model.provider)
            self._finish_reason = reason
            self.finished = True  # a finish_reason then EOF is complete; [DONE] is optional after it

    def _append(self, cls: type[TextContent | ThinkingContent], attr: str, text: str,
                kind: Literal["text_delta", "thinking_delta"]) -> StreamEvent:
        content = self.message.content
        if not content or not isinstance(content[-1], cls):
            content.append(TextContent(text="") if cls is TextContent else ThinkingContent(thinking=""))
        self.pieces.add(content[-1], attr, text)
        return StreamEvent(kind, self.message, text, len(content) - 1)

    def _content(self, value: RawJson) -> str:
        """A delta's text: a string, or (some servers) a list of {"type": "text", "text": …} parts."""
        if isinstance(value, list):
            return "".join(p["text"] for p in value
                           if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str))
        return text_of(value, provider=self.model.provider, what="content")

    def _tool_fragment(self, frag: RawJson) -> StreamEvent:
        fn = frag.get("function") or {} if isinstance(frag, dict) else None
        if not isinstance(fn, dict):
            raise malformed(self.model.provider, "a tool call", frag)
        if "index" in frag:
            key = ("i", frag["index"])
        elif frag.get("id") and (self._last_call_key is None or self._calls_id(self._last_call_key) != frag["id"]):
            key = ("id", frag["id"])
        else:
            key = self._last_call_key if self._last_call_key is not None else ("i", 0)
        name = text_of(fn.get("name"), provider=self.model.provider, what="a tool's name")
        if key not in self._calls:
            call_id = frag.get("id")
            self.message.content.append(ToolCall(id=str(call_id) if call_id else f"call_{len(self._calls)}", name=name))
            self._calls[key] = (len(self.message.content) - 1, [])
        self._last_call_key = key
        index, raw = self._calls[key]
        block = self._call_at(index)
        if name and not block.name:
            block.name = name
        args = fn.get("arguments")
        piece = json.dumps(args) if isinstance(args, dict) else text_of(args, provider=self.model.provider,
                                                                         what="a tool's arguments")
        raw.append(piece)
        return StreamEvent("toolcall_delta", self.message, piece, index)

    def _call_at(self, index: int) -> ToolCall:
        return tool_call_at(self.message, index)

    def _calls_id(self, key: _CallKey) -> str:
        return self._call_at(self._calls[key][0]).id

    def _counts(self, raw: RawJson) -> None:
        """Token counts are only reported: counts of the wrong kind are left out, not a failure."""
        try:
            self._usage(raw)
        except (TypeError, ValueError, AttributeError):
            pass

    def _usage(self, raw: RawJson) -> None:
        prompt = int(raw.get("prompt_tokens") or 0)
        completion = int(raw.get("completion_tokens") or 0)
        cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        reasoning = int((raw.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
        output = completion
        if reasoning and int(raw.get("total_tokens") or 0) == prompt + completion + reasoning:
            output += reasoning  # this host counts reasoning apart from completion tokens
        usage = Usage(input=max(0, prompt - cached), output=output, cache_read=cached)
        self.message.usage = with_cost(self.model, usage)

    def finish(self) -> AssistantMessage:
        for index, raw in self._calls.values():
            set_arguments(self._call_at(index), "".join(raw))
        reason = _FINISH.get(self._finish_reason or "stop", "stop")
        if self._finish_reason == "content_filter":
            self.message.stop_reason = "error"
            self.message.error_message = f"{self.model.provider} stopped the reply with its content filter."
        else:
            has_calls = any(isinstance(b, ToolCall) for b in self.message.content)
            self.message.stop_reason = "toolUse" if has_calls and reason == "stop" else reason
        return snapshot(self.message)


def stream_openai(
    model: ModelInfo, context: LlmContext, options: StreamOptions, signal: AbortSignal | None = None
) -> AsyncIterator[StreamEvent]:
    return run_http_stream(
        model=model,
        url=model.base_url.rstrip("/") + "/chat/completions",
        headers=bearer_headers(options.api_key),
        body=build_body(model, context, options),
        parser=OpenAIParser(model),
        options=options,
        signal=signal,
        unstreamed=OpenAIUnstreamed(),
    )
