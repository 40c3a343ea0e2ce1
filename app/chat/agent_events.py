"""What an agent or session event means for a front end: the controller's events it becomes.

Pure translation of the events that need no state; the controller adds what does (the status,
the path after a compaction). Events not named here (tool progress, turns) mean nothing to a
front end today.
"""

from __future__ import annotations

from treechat.agent.events import (
    AgentEnd,
    AgentStart,
    ImagesReplaced,
    MessageStart,
    MessageUpdate,
    RetryWait,
    StreamWait,
    TurnStart,
)
from treechat.chat.events import (
    Change,
    ChatEvent,
    CompactionStarted,
    Failed,
    Notice,
    QueueChanged,
    ReplyPending,
    ReplyStreaming,
    RunEnded,
    RunStarted,
    Succeeded,
    Unsaved,
    Waiting,
)
from treechat.prompts.context import images_replaced_note
from treechat.session.events import CompactionStart, PersistFailed, QueueUpdate, SessionEvent
from treechat.storage.model import AssistantMessage, UserMessage

# after these the status bar changes (tokens, queue, model, thinking)
CHANGES_STATUS = frozenset({"agent_end", "queue_update", "model_changed", "thinking_level_changed",
                            "active_tools_changed"})


def translate(event: SessionEvent, *, previewing: bool = False) -> list[ChatEvent | Change]:
    match event:
        case AgentStart():
            return [RunStarted()]
        case TurnStart():
            return [ReplyPending(previewing=previewing)]
        case MessageStart(message=AssistantMessage() as reply):
            return [ReplyStreaming(reply, started=True, previewing=previewing)]
        case MessageUpdate():
            ev = event.assistant_event
            delta = ev.delta if ev is not None and ev.type == "text_delta" else ""
            return [ReplyStreaming(event.message, delta=delta, previewing=previewing)]
        case AgentEnd():
            last = event.messages[-1] if event.messages else None
            ok = not (isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted"))
            return [RunEnded(), Succeeded()] if ok else [RunEnded()]
        case QueueUpdate():
            return [QueueChanged(tuple(event.steering), tuple(event.follow_up))]
        case CompactionStart():
            return [CompactionStarted(event.reason)]
        case RetryWait():
            return [Waiting(seconds=event.delay_s, reason=event.reason, kind="retry", detail=event)]
        case StreamWait():
            what = "no reply yet" if event.phase == "first_byte" else "the reply stopped"
            return [Waiting(seconds=max(event.limit_s - event.waited_s, 0.0), kind="silence", detail=event,
                            reason=f"{what} ({event.waited_s:.0f} s); Esc stops")]
        case PersistFailed():
            return [Unsaved(event.message, event.reason, str(event.recovery_path) if event.recovery_path else None),
                    Failed(unsaved_text(event))]
        case ImagesReplaced():
            return [Notice(images_replaced_note(event.model, event.count), "warning")]
        case _:
            return []


def unsaved_text(event: PersistFailed) -> str:
    """What a failed save means for the person: what was not saved and why (the store's own one
    line: a database it cannot reach names its host, never a password), what happened to the run,
    and where the message is kept."""
    path = event.recovery_path
    kept = f"It is kept in {path}." if path else "It could not be kept anywhere: copy it now."
    if isinstance(event.message, UserMessage):
        return f"Your message was not sent: it could not be saved to the session ({event.reason}). {kept}"
    what = "The reply" if isinstance(event.message, AssistantMessage) else "A message of the run"
    return f"{what} could not be saved to the session ({event.reason}); the run stopped. {kept}"
