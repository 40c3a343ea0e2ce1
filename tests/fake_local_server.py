"""A fake of the local servers people run, behaving (not scripted) as each does, on the loopback
FakeProvider: it counts tokens, enforces its window, answers probes and fails the way the real one
fails. Each quirk is a switch, and a preset per server turns on what that server does.

The llama-cpp-python preset is what a real llama-cpp-python 0.3.36 server did (`python -m
llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --n_ctx 2048`, tried for issue 20):

- `string_only`: a message whose content is a list of parts makes its chat template raise
  (`can only concatenate str (not "list") to str`);
- `empty_stream_on_error`: any failure while streaming is `200`, the event-stream headers, and a
  stream that ends with no data (the reason only in the server's log);
- `window_in_400`: the same request without `stream` gets `400` stating the window:
  "This model's maximum context length is 2048 tokens. However, you requested 2631 tokens (2531 in
  the messages, 100 in the completion)…", code `context_length_exceeded`;
- `usage=False`: no usage in streamed chunks, even with `stream_options.include_usage`
  (a non-streamed reply has it);
- `props=False`: no `/props` (404), no window in `/v1/models`;
- `model_id`: the model's file path;
- `null_content_refused`: an assistant message with `content: null` fails the request check (500);
- `max_tokens` is cut to what the window leaves, never refused.

The others follow providers.md: llama.cpp's llama-server (`/props` n_ctx, 400 "the request
exceeds the available context size" before any stream), Ollama (`/api/tags`, `/api/show`,
`/api/ps`; a prompt over the window is cut without a word), vLLM (`max_model_len` in `/v1/models`,
400 when prompt + max_tokens exceed it), LM Studio (`/api/v1/models` loaded instances).
`trickle_probes` makes every probe endpoint answer one byte at a time, forever.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from tests.fake_provider import SSE_HEADERS, Drip, FakeProvider, Recorded, Send, Status, openai_chunks, sse_frame

SUMMARY_MARK = "context summarization assistant"
MODEL_PATH = "/home/me/models/SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class LocalServer:
    """Answers every request to `fake` as a local server of `kind` started with `window` tokens."""

    fake: FakeProvider
    kind: str = "llama-cpp-python"  # | "llama.cpp" | "ollama" | "vllm" | "lmstudio"
    window: int = 2048
    model_id: str = MODEL_PATH
    chars_per_token: float = 3.5  # its tokenizer counts more tokens than chars/4
    string_only: bool = False
    empty_stream_on_error: bool = False
    window_in_400: bool = False
    usage: bool = True
    props: bool = False
    null_content_refused: bool = False
    trickle_probes: bool = False
    reply: str = "ok"
    # what happened, for the tests to read
    overflows: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    summaries: int = 0

    def __post_init__(self) -> None:
        self.fake.responder = self.answer

    # ------------------------------------------------------------ presets

    @classmethod
    def llama_cpp_python(cls, fake: FakeProvider, window: int = 2048, **kw: Any) -> LocalServer:
        return cls(fake, "llama-cpp-python", window, string_only=True, empty_stream_on_error=True,
                   window_in_400=True, usage=False, props=False, null_content_refused=True, **kw)

    @classmethod
    def llama_cpp(cls, fake: FakeProvider, window: int = 4096, **kw: Any) -> LocalServer:
        return cls(fake, "llama.cpp", window, props=True, **{"model_id": "model.gguf", **kw})

    @classmethod
    def ollama(cls, fake: FakeProvider, window: int = 4096, **kw: Any) -> LocalServer:
        return cls(fake, "ollama", window, **{"model_id": "qwen3:8b", **kw})

    @classmethod
    def vllm(cls, fake: FakeProvider, window: int = 8192, **kw: Any) -> LocalServer:
        return cls(fake, "vllm", window, **{"model_id": "Qwen/Qwen3-8B", **kw})

    @classmethod
    def lmstudio(cls, fake: FakeProvider, window: int = 4096, **kw: Any) -> LocalServer:
        return cls(fake, "lmstudio", window, **{"model_id": "google/gemma-3-4b", **kw})

    # ------------------------------------------------------------ counting

    def tokens(self, body: dict[str, Any]) -> int:
        """Prompt tokens as this server's tokenizer and chat template count them."""
        chars = 0
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            chars += len(content or "") + len(json.dumps(message.get("tool_calls") or ""))
            chars += 12  # the template's role markers
        chars += len(json.dumps(body.get("tools") or []))
        return math.ceil(chars / self.chars_per_token)

    # ------------------------------------------------------------ answering

    def answer(self, request: Recorded) -> list[Any] | None:
        if self.trickle_probes and (request.method == "GET" or request.path == "/api/show"):
            return [Status(200, {"Content-Type": "application/json"}), Drip(b" ", every=0.05)]
        if request.path.endswith("/chat/completions") and request.method == "POST":
            return self._chat(request.body)
        return self._probe(request)

    def _json(self, code: int, body: Any) -> list[Any]:
        return [Status(code, {"Content-Type": "application/json"}, "close"), Send(json.dumps(body).encode())]

    def _fail(self, streamed: bool, code: int, body: Any, reason: str) -> list[Any]:
        self.failures.append(reason)
        if streamed and self.empty_stream_on_error:
            return [Status(200, SSE_HEADERS)]  # the headers went out before the failure: nothing follows
        return self._json(code, body)

    def _chat(self, body: dict[str, Any]) -> list[Any]:
        streamed = bool(body.get("stream"))
        messages = body.get("messages") or []
        if self.null_content_refused and any(m.get("role") == "assistant" and m.get("content") is None for m in messages):
            return self._json(500, {"error": {"message": "7 validation errors: … 'input': {'role': 'assistant', "
                                              "'content': None …", "type": "internal_server_error"}})
        if self.string_only and any(isinstance(m.get("content"), list) for m in messages):
            return self._fail(streamed, 500, {"error": {"message": 'can only concatenate str (not "list") to str',
                                                        "type": "internal_server_error"}}, "parts")
        prompt = self.tokens(body)
        asked = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        over = self._overflow(prompt, asked)
        if over is not None:
            self.overflows.append(prompt)
            return self._fail(streamed, 400, over, "overflow")
        prompt = min(prompt, self.window)  # (Ollama: cut without a word)
        self.accepted.append(prompt)
        summary = SUMMARY_MARK in json.dumps(messages)
        self.summaries += summary
        text = "## Goal\nKeep going.\n\n## Progress\n- [x] earlier turns summarised" if summary else self.reply
        usage = {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}
        if not streamed:
            return self._json(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": self.model_id,
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                 "finish_reason": "stop"}], "usage": usage})
        chunks = openai_chunks([text], usage=usage if self.usage else None)
        return [Status(200, SSE_HEADERS), *(Send(sse_frame(c)) for c in chunks)]

    def _overflow(self, prompt: int, asked: int) -> dict[str, Any] | None:
        if self.kind == "ollama":
            return None
        if self.kind == "vllm" and prompt + asked > self.window:
            return {"object": "error", "message": f"This model's maximum context length is {self.window} tokens. "
                    f"However, you requested {prompt + asked} tokens ({prompt} in the messages, {asked} in the "
                    "completion). Please reduce the length of the messages or completion.",
                    "type": "BadRequestError", "code": 400}
        if prompt < self.window:
            return None
        if self.kind == "llama.cpp":
            return {"error": {"code": 400, "message": "the request exceeds the available context size, try "
                              "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": prompt,
                              "n_ctx": self.window}}
        if self.kind == "lmstudio":
            return {"error": f"Trying to keep the first {prompt} tokens when context the overflows. However, the "
                    f"model is loaded with context length of only {self.window} tokens, which is not enough."}
        return {"error": {"message": f"This model's maximum context length is {self.window} tokens. However, you "
                          f"requested {prompt + asked} tokens ({prompt} in the messages, {asked} in the completion). "
                          "Please reduce the length of the messages or completion.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}

    def _probe(self, request: Recorded) -> list[Any]:
        path, kind = request.path, self.kind
        if path == "/v1/models":
            row: dict[str, Any] = {"id": self.model_id, "object": "model", "owned_by": "me"}
            if kind == "vllm":
                row["max_model_len"] = self.window
            return self._json(200, {"object": "list", "data": [row]})
        if path == "/props" and kind == "llama.cpp" and self.props:
            return self._json(200, {"default_generation_settings": {"n_ctx": self.window}, "total_slots": 1})
        if kind == "ollama" and path == "/api/tags":
            return self._json(200, {"models": [{"name": self.model_id, "model": self.model_id}]})
        if kind == "ollama" and path == "/api/show":
            return self._json(200, {"model_info": {"qwen3.context_length": 40960}, "capabilities": ["completion"]})
        if kind == "ollama" and path == "/api/ps":
            return self._json(200, {"models": [{"name": self.model_id, "context_length": self.window}]})
        if kind == "lmstudio" and path == "/api/v1/models":
            return self._json(200, {"models": [{"key": self.model_id, "max_context_length": 131072, "loaded_instances": [
                {"id": self.model_id, "config": {"context_length": self.window}}]}]})
        return self._json(404, {"detail": "Not Found"})
