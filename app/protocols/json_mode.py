"""`treechat -p PROMPT --mode json`: the session's header, then every event of the run as a JSON
line (Pi 0.73.1's `--mode json`: its event names, shapes and order; `pi_events.py`).

stdout carries only those lines; a failure is one line on stderr besides, and the exit status is
print mode's (0 an answer, 1 a failure, 2 nothing could be sent, 130 interrupted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from treechat.agent.types import JsonObject
from treechat.chat import Chat, ChatError
from treechat.chat.events import ChatEvent, Failed
from treechat.cli.interrupt import stop_on_ctrl_c
from treechat.session.agent_session import AgentSession
from treechat.session.events import SessionEvent
from treechat.storage.model import AssistantMessage
from treechat.text.sanitize import visible_line

from .framing import LineSink
from .pi_events import PiEvents


async def session_header(chat: Chat) -> JsonObject:
    """Pi's first line: {"type": "session", "version": 3, "id", "timestamp", "cwd"}."""
    meta = await chat.session.storage.get_metadata()
    return {"type": "session", "version": 3, "id": meta.id, "timestamp": meta.created_at, "cwd": meta.cwd or chat.cwd}


def tell_events(chat: Chat, out: LineSink, events: PiEvents,
                also: Callable[[AgentSession], None] | None = None) -> Callable[[], None]:
    """Every AgentSession the chat makes (and the one it has) tells its events to `out` as Pi's
    (`events` is the mapping; `also` sees each new agent first). Returns the unsubscribe."""
    unsubscribe: list[Callable[[], None]] = []

    def watch(agent: AgentSession) -> None:
        events.reset()
        if also is not None:
            also(agent)

        async def tell(event: SessionEvent) -> None:
            for record in events.feed(event):
                await out.send(record)

        unsubscribe.append(agent.subscribe(tell))

    unsubscribe.append(chat.watch_agents(watch))
    if chat.agent is not None:
        watch(chat.agent)

    def stop() -> None:
        for undo in unsubscribe:
            undo()

    return stop


async def run_json(chat: Chat, prompt: str, *, out: LineSink, err: TextIO, attach: Sequence[str] = ()) -> int:
    """Send `prompt` in the chat's open session; its events to `out`."""
    await out.send(await session_header(chat))
    stop = tell_events(chat, out, PiEvents(chat.current_model))
    failures: list[str] = []

    def on_chat(event: ChatEvent) -> None:
        if isinstance(event, Failed):
            failures.append(event.text)

    unsubscribe = chat.subscribe(on_chat)
    try:
        with stop_on_ctrl_c(chat.abort) as interrupted:
            last = await chat.prompt(prompt, attach=attach)
    except ChatError as error:  # nothing was sent and nothing written
        _line(err, str(error))
        return 2
    finally:
        unsubscribe()
        stop()
    return _exit_code(last, failures, err, interrupted=interrupted.happened)


def _exit_code(last: AssistantMessage | None, failures: list[str], err: TextIO, *, interrupted: bool) -> int:
    if failures:
        _line(err, failures[-1])
        return 1
    if last is None:
        _line(err, "the model returned nothing.")
        return 1
    if last.stop_reason == "aborted" or interrupted:
        _line(err, "interrupted; the partial reply was saved.")
        return 130
    if last.stop_reason == "error":
        _line(err, last.error_message or "the provider failed")
        return 1
    return 0


def _line(err: TextIO, text: str) -> None:
    err.write(f"treechat: {visible_line(text)}\n")
    err.flush()
