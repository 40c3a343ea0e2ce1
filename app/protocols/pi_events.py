"""An AgentSession's events as Pi 0.73.1's JSON events (`AgentSessionEvent`, docs/json.md and
docs/rpc.md of @mariozechner/pi-coding-agent), for `--mode json` and `--mode rpc` alike.

`PiEvents.feed(event)` turns one `SessionEvent` into the JSON objects Pi would write for it, in
its order (zero, one or several). Where treechat's events are finer or coarser than Pi's, the
difference is made up here, so a client written for Pi sees Pi's kinds in Pi's order:

- A reply's blocks: our providers tell deltas (and Anthropic's tool-call ends); Pi tells every
  block's start, its deltas and its end (`text_start` … `text_end` with the block's content,
  `toolcall_end` with the call). A block starts at its first delta and ends when the next one
  starts, or before the reply's `message_end` (a failed reply's are left open, as in Pi).
- Retries: we retry a request that failed before its first byte inside the provider
  (`retry_wait`); Pi ends the run with the failed reply, says `auto_retry_start`, and runs again
  (`agent_start`, `turn_start`, …, `auto_retry_end` after the next reply). The failed attempt is
  told as Pi tells it (an error reply, `turn_end`, `agent_end`); it is not stored, and Pi drops it
  from the conversation too. The run's last `agent_end` lists what came after the retry.
- `queue_update` is told when the queues changed (we also tell it when a prompt starts).
- Waits for a silent provider, images replaced for a text-only model, the tool set and the model
  changing: Pi has no event for them, and none is made up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, assert_never

from treechat.agent.events import (
    AgentEnd,
    AgentStart,
    ImagesReplaced,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    RetryWait,
    StreamWait,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from treechat.agent.types import AgentMessage, Json, JsonObject, ToolResult
from treechat.llm.apis import PI_NAMES, Api
from treechat.llm.types import ModelInfo
from treechat.session.events import (
    ActiveToolsChanged,
    CompactionEnd,
    CompactionResult,
    CompactionStart,
    ModelChanged,
    PersistFailed,
    QueueUpdate,
    SessionEvent,
    SessionReloaded,
    ThinkingLevelChanged,
)
from treechat.storage.model import AssistantMessage, TextContent, ThinkingContent, ToolCall, dump

BlockKind = Literal["text", "thinking", "toolcall"]


def _pi_api(api: Api | Literal["unknown"]) -> str:
    """The model's `api` as Pi names it (the messages' own; "unknown" as it is)."""
    return "unknown" if api == "unknown" else PI_NAMES[api]


def message_json(message: AgentMessage) -> JsonObject:
    """A message as Pi writes it (camelCase, the fields it has: a tool result without details
    has no `details`)."""
    out = dump(message)
    if out.get("details", False) is None:
        del out["details"]
    return out


def result_json(result: ToolResult) -> JsonObject:
    """A tool's result as Pi's `tool_execution_*` events carry it: {content, details}."""
    out: JsonObject = {"content": [dump(block) for block in result.content]}
    if result.details is not None:
        out["details"] = result.details
    return out


def model_json(model: ModelInfo) -> JsonObject:
    """Pi's `Model` object (get_state, get_available_models, set_model, cycle_model)."""
    cost = model.cost
    return {"id": model.id, "name": model.name or model.id, "api": _pi_api(model.api),
            "provider": model.provider, "baseUrl": model.base_url, "reasoning": model.reasoning,
            "input": list(model.input),
            "cost": {"input": cost.input, "output": cost.output, "cacheRead": cost.cache_read,
                     "cacheWrite": cost.cache_write},
            "contextWindow": model.context_window, "maxTokens": model.max_tokens}


def compaction_json(result: CompactionResult) -> JsonObject:
    """Pi's `CompactionResult` (the `compact` response, `compaction_end`'s result); `details`
    holds what treechat adds: the new entry and the estimate after it."""
    return {"summary": result.summary, "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
            "details": {"entryId": result.entry_id, "tokensAfter": result.tokens_after}}


@dataclass
class _Block:
    kind: BlockKind
    ended: bool = False


_DELTA_KIND: dict[str, BlockKind] = {"text_delta": "text", "thinking_delta": "thinking",
                                     "toolcall_delta": "toolcall", "toolcall_end": "toolcall"}


class PiEvents:
    """One agent's events in, Pi's JSON events out (`feed`). Stateful per run: make one per
    AgentSession, or `reset()` when another takes over. `current_model` names the model a
    failed attempt was sent to (a retried request has no reply of its own)."""

    def __init__(self, current_model: Callable[[], ModelInfo | None] = lambda: None) -> None:
        self.current_model = current_model
        self._queue: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self.reset()

    def reset(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._open: int | None = None
        self._told: list[AgentMessage] = []  # messages of this run told by message_end
        self._reported = 0  # how many of them a made-up agent_end (a retry) listed already
        self._retry = 0  # the retry attempt under way (0: none)
        self._restart = False  # a retry's agent_start/turn_start is still to be told
        self._unsent = False  # the reply under way began while a retry waited: it was never sent
        self._in_run = False
        self._partial: tuple[AssistantMessage, JsonObject] | None = None

    @property
    def retrying(self) -> bool:
        """A retry is waiting to be sent (Pi's `abort_retry` stops it)."""
        return self._restart

    def feed(self, event: SessionEvent) -> list[JsonObject]:  # noqa: C901  one case per event kind
        match event:
            case AgentStart():
                self.reset()
                self._in_run = True
                return [{"type": "agent_start"}]
            case TurnStart():
                return [*self._restarted(), {"type": "turn_start"}]
            case MessageStart():
                return self._message_start(event.message)
            case MessageUpdate():
                return self._update(event)
            case MessageEnd():
                return self._message_end(event.message)
            case ToolExecutionStart():
                return [{"type": "tool_execution_start", "toolCallId": event.tool_call_id, "toolName": event.tool_name,
                         "args": event.args}]
            case ToolExecutionUpdate():
                partial: Json = result_json(event.partial_result) if event.partial_result is not None else None
                return [{"type": "tool_execution_update", "toolCallId": event.tool_call_id,
                         "toolName": event.tool_name, "args": event.args, "partialResult": partial}]
            case ToolExecutionEnd():
                return [{"type": "tool_execution_end", "toolCallId": event.tool_call_id, "toolName": event.tool_name,
                         "result": result_json(event.result), "isError": event.is_error}]
            case TurnEnd():
                return [*self._restarted(), {"type": "turn_end", "message": message_json(event.message),
                                             "toolResults": [message_json(m) for m in event.tool_results]}]
            case AgentEnd():
                return self._agent_end(event.messages)
            case RetryWait():
                return self._retry_wait(event)
            case QueueUpdate():
                queue = (tuple(event.steering), tuple(event.follow_up))
                if queue == self._queue:
                    return []
                self._queue = queue
                return [{"type": "queue_update", "steering": list(queue[0]), "followUp": list(queue[1])}]
            case CompactionStart():
                return [{"type": "compaction_start", "reason": event.reason}]
            case CompactionEnd():
                return [self._compaction_end(event)]
            case ThinkingLevelChanged():
                return [{"type": "thinking_level_changed", "level": event.level}]
            case (StreamWait() | ImagesReplaced() | ModelChanged() | ActiveToolsChanged() | PersistFailed()
                  | SessionReloaded()):
                return []
            case _:
                assert_never(event)

    # ------------------------------------------------------------ messages and their blocks

    def _message_start(self, message: AgentMessage) -> list[JsonObject]:
        waiting = self._restart
        out = self._restarted()
        if isinstance(message, AssistantMessage):
            self._blocks, self._open = {}, None
            self._unsent = waiting and message.stop_reason == "aborted"  # (a stream's reply starts as "stop")
        out.append({"type": "message_start", "message": message_json(message)})
        return out

    def _update(self, event: MessageUpdate) -> list[JsonObject]:
        ev = event.assistant_event
        if ev is None or ev.content_index is None or ev.type not in _DELTA_KIND:
            return []
        partial = self._partial_json(ev.partial)
        index, kind = ev.content_index, _DELTA_KIND[ev.type]
        out: list[JsonObject] = []
        block = self._blocks.get(index)
        if block is None:
            out.extend(self._end_open(ev.partial, partial))
            block = self._blocks[index] = _Block(kind)
            self._open = index
            out.append(self._assistant_event(partial, {"type": f"{kind}_start", "contentIndex": index}))
        if ev.type == "toolcall_end":
            out.extend(self._end(index, ev.partial, partial))
        elif not block.ended:
            out.append(self._assistant_event(partial, {"type": ev.type, "contentIndex": index, "delta": ev.delta}))
        return out

    def _partial_json(self, partial: AssistantMessage) -> JsonObject:
        """The reply so far as JSON, made once for the updates that share it (one network read's)."""
        if self._partial is None or self._partial[0] is not partial:
            self._partial = (partial, message_json(partial))
        return self._partial[1]

    def _end_open(self, message: AssistantMessage, partial: JsonObject) -> list[JsonObject]:
        return self._end(self._open, message, partial) if self._open is not None else []

    def _end(self, index: int, message: AssistantMessage, partial: JsonObject) -> list[JsonObject]:
        block = self._blocks.get(index)
        if block is None or block.ended:
            return []
        block.ended = True
        if self._open == index:
            self._open = None
        part = message.content[index] if index < len(message.content) else None
        body: JsonObject = {"type": f"{block.kind}_end", "contentIndex": index}
        if isinstance(part, ToolCall):
            body["toolCall"] = dump(part)
        elif isinstance(part, TextContent):
            body["content"] = part.text
        elif isinstance(part, ThinkingContent):
            body["content"] = part.thinking
        return [self._assistant_event(partial, body)]

    @staticmethod
    def _assistant_event(partial: JsonObject, body: JsonObject) -> JsonObject:
        return {"type": "message_update", "assistantMessageEvent": {**body, "partial": partial}, "message": partial}

    def _message_end(self, message: AgentMessage) -> list[JsonObject]:
        out: list[JsonObject] = []
        if isinstance(message, AssistantMessage) and message.stop_reason != "error":  # (Pi ends a stopped reply's)
            partial = message_json(message)
            for index in sorted(self._blocks):
                out.extend(self._end(index, message, partial))
        out.append({"type": "message_end", "message": message_json(message)})
        self._told.append(message)
        if isinstance(message, AssistantMessage) and self._retry and message.stop_reason != "error":
            if self._unsent and message.stop_reason == "aborted":  # stopped while waiting to retry
                out.append({"type": "auto_retry_end", "success": False, "attempt": self._retry,
                            "finalError": "Retry cancelled"})
            else:
                out.append({"type": "auto_retry_end", "success": True, "attempt": self._retry})
            self._retry = 0
        return out

    def _agent_end(self, messages: Sequence[AgentMessage]) -> list[JsonObject]:
        out = self._restarted()
        out.append({"type": "agent_end", "messages": [message_json(m) for m in messages[self._reported:]]})
        if self._retry:  # the retries gave up: Pi says so after the run
            last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
            out.append({"type": "auto_retry_end", "success": False, "attempt": self._retry,
                        "finalError": (last.error_message if last is not None else None) or "Retry failed"})
        self.reset()
        return out

    # ------------------------------------------------------------ retries

    def _retry_wait(self, event: RetryWait) -> list[JsonObject]:
        if not self._in_run:
            return []  # a summary request of a compaction: Pi's retries are of a run's replies only
        out = self._restarted()
        model = self.current_model()
        failed = AssistantMessage(api=_pi_api(model.api) if model else "",
                                  provider=model.provider if model else event.provider,
                                  model=model.id if model else "", stop_reason="error", error_message=event.reason)
        shown = message_json(failed)
        out += [{"type": "message_start", "message": shown}, {"type": "message_end", "message": shown},
                {"type": "turn_end", "message": shown, "toolResults": []},
                {"type": "agent_end", "messages": [*(message_json(m) for m in self._told[self._reported:]), shown]}]
        self._reported = len(self._told)
        self._retry = event.attempt
        self._restart = True
        out.append({"type": "auto_retry_start", "attempt": event.attempt, "maxAttempts": event.max_attempts,
                    "delayMs": round(event.delay_s * 1000), "errorMessage": event.reason})
        return out

    def _restarted(self) -> list[JsonObject]:
        """Pi's new run after a retry's wait: told before the first event of the retried request."""
        if not self._restart:
            return []
        self._restart = False
        self._blocks, self._open = {}, None
        return [{"type": "agent_start"}, {"type": "turn_start"}]

    # ------------------------------------------------------------ compaction

    @staticmethod
    def _compaction_end(event: CompactionEnd) -> JsonObject:
        out: JsonObject = {"type": "compaction_end", "reason": event.reason}
        if event.result is not None:
            out["result"] = compaction_json(event.result)
        out["aborted"] = bool(event.error) and "abort" in (event.error or "").lower()
        out["willRetry"] = event.will_retry
        if event.error:
            out["errorMessage"] = event.error
        return out
