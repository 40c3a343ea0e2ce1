"""What an agent or session event means for a front end: the controller's events it becomes.

Pure translation of the events that need no state; the controller adds what does (the status,
the path after a compaction). Events not named here (tool progress, turns) mean nothing to a
front end today.
"""

from __future__ import annotations

from typing import Any

from treechat.chat_events import (
    ChatEvent,
    CompactionStarted,
    Failed,
    Notice,
    QueueChanged,
    ReplyStreaming,
    RunEnded,
    RunStarted,
    Succeeded,
    Unsaved,
    Waiting,
)
from treechat.prompt_context import images_replaced_note

# after these the status bar changes (tokens, queue, model, thinking)
CHANGES_STATUS = frozenset({"agent_end", "queue_update", "model_changed", "thinking_level_changed",
                            "active_tools_changed"})


def translate(event: Any) -> list[ChatEvent]:
    kind = event.type
    if kind == "agent_start":
        return [RunStarted()]
    if kind == "message_start" and getattr(event.message, "role", None) == "assistant":
        return [ReplyStreaming(event.message, started=True)]
    if kind == "message_update":
        ev = event.assistant_event
        delta = ev.delta if ev is not None and ev.type == "text_delta" else ""
        return [ReplyStreaming(event.message, delta=delta)]
    if kind == "agent_end":
        last = event.messages[-1] if event.messages else None
        ok = getattr(last, "stop_reason", None) not in ("error", "aborted")
        return [RunEnded(), Succeeded()] if ok else [RunEnded()]
    if kind == "queue_update":
        return [QueueChanged(tuple(event.steering), tuple(event.follow_up))]
    if kind == "compaction_start":
        return [CompactionStarted(event.reason)]
    if kind == "retry_wait":
        return [Waiting(seconds=event.delay_s, reason=event.reason, kind="retry", detail=event)]
    if kind == "stream_wait":
        what = "no reply yet" if event.phase == "first_byte" else "the reply stopped"
        return [Waiting(seconds=max(event.limit_s - event.waited_s, 0.0), kind="silence", detail=event,
                        reason=f"{what} ({event.waited_s:.0f} s); Esc stops")]
    if kind == "persist_failed":
        where = f"kept in {event.recovery_path}" if event.recovery_path else "it could not be kept anywhere: copy it now"
        return [Unsaved(event.message, event.reason, str(event.recovery_path) if event.recovery_path else None),
                Failed(f"Could not save to the session ({event.reason}); the run stopped. The message is {where}.")]
    if kind == "images_replaced":
        return [Notice(images_replaced_note(event.model, event.count), "warning")]
    return []
