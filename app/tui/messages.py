"""One Textual message per controller event (`treechat.chat_events`), posted in event order.

The App's listener wraps each event in the message of the same name and posts it to itself, so
every screen update happens in the App's message loop, one event at a time, handled with `@on`.
Tests can watch them with `message_hook` like any other message.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from textual.message import Message

from treechat import chat_events as ev

E = TypeVar("E")


class ChatMessage(Message, Generic[E]):
    """A controller event, delivered in the App's message loop."""

    def __init__(self, event: E) -> None:
        self.event = event
        super().__init__()


class SessionOpened(ChatMessage[ev.SessionOpened]):
    pass


class TreeLoaded(ChatMessage[ev.TreeLoaded]):
    pass


class EntryAppended(ChatMessage[ev.EntryAppended]):
    pass


class LabelChanged(ChatMessage[ev.LabelChanged]):
    pass


class PathChanged(ChatMessage[ev.PathChanged]):
    pass


class Focused(ChatMessage[ev.Focused]):
    pass


class HeaderChanged(ChatMessage[ev.HeaderChanged]):
    pass


class StatusChanged(ChatMessage[ev.StatusChanged]):
    pass


class QueueChanged(ChatMessage[ev.QueueChanged]):
    pass


class RunStarted(ChatMessage[ev.RunStarted]):
    pass


class RunEnded(ChatMessage[ev.RunEnded]):
    pass


class ReplyStreaming(ChatMessage[ev.ReplyStreaming]):
    pass


class CompactionStarted(ChatMessage[ev.CompactionStarted]):
    pass


class CompactionEnded(ChatMessage[ev.CompactionEnded]):
    pass


class Waiting(ChatMessage[ev.Waiting]):
    pass


class Readiness(ChatMessage[ev.Readiness]):
    pass


class Notice(ChatMessage[ev.Notice]):
    pass


class Failed(ChatMessage[ev.Failed]):
    pass


class Unsaved(ChatMessage[ev.Unsaved]):
    pass


class RestoreOffered(ChatMessage[ev.RestoreOffered]):
    pass


class Succeeded(ChatMessage[ev.Succeeded]):
    pass


class SessionsChanged(ChatMessage[ev.SessionsChanged]):
    pass


MESSAGE_FOR: dict[type, type[ChatMessage[Any]]] = {
    ev.SessionOpened: SessionOpened,
    ev.TreeLoaded: TreeLoaded,
    ev.EntryAppended: EntryAppended,
    ev.LabelChanged: LabelChanged,
    ev.PathChanged: PathChanged,
    ev.Focused: Focused,
    ev.HeaderChanged: HeaderChanged,
    ev.StatusChanged: StatusChanged,
    ev.QueueChanged: QueueChanged,
    ev.RunStarted: RunStarted,
    ev.RunEnded: RunEnded,
    ev.ReplyStreaming: ReplyStreaming,
    ev.CompactionStarted: CompactionStarted,
    ev.CompactionEnded: CompactionEnded,
    ev.Waiting: Waiting,
    ev.Readiness: Readiness,
    ev.Notice: Notice,
    ev.Failed: Failed,
    ev.Unsaved: Unsaved,
    ev.RestoreOffered: RestoreOffered,
    ev.Succeeded: Succeeded,
    ev.SessionsChanged: SessionsChanged,
}


def message_for(event: ev.ChatEvent) -> ChatMessage[Any]:
    return MESSAGE_FOR[type(event)](event)
