"""A scripted stream function for agent tests: replays assistant messages, records each call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from treechat.llm.types import StreamEvent
from treechat.storage.model import AssistantMessage, StopReason, TextContent, ToolCall


def reply(text: str = "ok", *, calls: Sequence[tuple[str, str, dict]] = (), stop: StopReason | None = None,
          error: str | None = None) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)] if text else []
    content += [ToolCall(id=i, name=n, arguments=a) for i, n, a in calls]
    return AssistantMessage(content=content, api="fake", provider="fake", model="fake-model",
                            stop_reason=stop or ("toolUse" if calls else "stop"), error_message=error)


class ScriptedStream:
    """Each call consumes the next item: an AssistantMessage, a callable(context) -> message, or an Exception."""

    def __init__(self, *script: Any, gate: asyncio.Event | None = None) -> None:
        self.script = list(script)
        self.contexts: list[Any] = []
        self.options: list[Any] = []
        self.gate = gate  # when set, each stream waits on it after `start` (to test steering/abort mid-stream)

    @property
    def calls(self) -> int:
        return len(self.contexts)

    async def __call__(self, model, context, options, signal):
        self.contexts.append(context)
        self.options.append(options)
        item = self.script.pop(0) if self.script else reply("(script exhausted)")
        if isinstance(item, Exception):
            raise item
        message = item(context) if callable(item) else item
        partial = message.model_copy(update={"content": []})
        yield StreamEvent("start", partial)
        if self.gate is not None:
            waiter = asyncio.ensure_future(signal.wait())
            gate = asyncio.ensure_future(self.gate.wait())
            await asyncio.wait({waiter, gate}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel(), gate.cancel()
            if signal.aborted:
                yield StreamEvent("error", partial.model_copy(update={"stop_reason": "aborted", "error_message": "Request was aborted"}))
                return
        for i, block in enumerate(message.content):
            partial = partial.model_copy(update={"content": list(message.content[: i + 1])})
            yield StreamEvent("text_delta", partial, getattr(block, "text", ""), i)
        yield StreamEvent("error" if message.stop_reason in ("error", "aborted") else "done", message)


def texts(messages: list[Any]) -> list[str]:
    """A compact view of a transcript: role:text."""
    out = []
    for m in messages:
        content = m.content if isinstance(m.content, str) else " ".join(getattr(b, "text", getattr(b, "name", "")) for b in m.content)
        out.append(f"{m.role}:{content}")
    return out


WAIT_S = 30  # a wait on an event that never comes fails the test rather than hanging it


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []
        self._arrived = asyncio.Event()

    async def __call__(self, event) -> None:
        self.events.append(event)
        self._arrived.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Until `condition` holds, checked as each event arrives (state is reduced before its
        listeners hear it): a wait on the events, not a poll."""
        async with asyncio.timeout(WAIT_S):
            while not condition():
                self._arrived.clear()
                await self._arrived.wait()

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def named(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def role_of(event: Any) -> str:
    return getattr(getattr(event, "message", None), "role", "")


Callback = Callable[..., Any]
