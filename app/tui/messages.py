"""One Textual message per controller event (`treechat.chat_events`), posted in event order.

The App's listener wraps each event in the message of the same name and posts it to itself, so
every screen update happens in the App's message loop, one event at a time, handled with `@on`.
Tests can watch them with `message_hook` like any other message.

The events are named here, not imported: the App's handlers are defined in the first frame,
before the controller and its events load (app/tui/starting.py). A test checks that every event
has its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.message import Message

if TYPE_CHECKING:
    from treechat import chat_events as ev

E = TypeVar("E")


class ChatMessage(Message, Generic[E]):
    """A controller event, delivered in the App's message loop."""

    def __init__(self, event: E) -> None:
        self.event = event
        super().__init__()


class SessionOpened(ChatMessage["ev.SessionOpened"]):
    pass


class TreeLoaded(ChatMessage["ev.TreeLoaded"]):
    pass


class EntryAppended(ChatMessage["ev.EntryAppended"]):
    pass


class LabelChanged(ChatMessage["ev.LabelChanged"]):
    pass


class PathChanged(ChatMessage["ev.PathChanged"]):
    pass


class Focused(ChatMessage["ev.Focused"]):
    pass


class HeaderChanged(ChatMessage["ev.HeaderChanged"]):
    pass


class StatusChanged(ChatMessage["ev.StatusChanged"]):
    pass


class QueueChanged(ChatMessage["ev.QueueChanged"]):
    pass


class RunStarted(ChatMessage["ev.RunStarted"]):
    pass


class RunEnded(ChatMessage["ev.RunEnded"]):
    pass


class ReplyStreaming(ChatMessage["ev.ReplyStreaming"]):
    pass


class CompactionStarted(ChatMessage["ev.CompactionStarted"]):
    pass


class CompactionEnded(ChatMessage["ev.CompactionEnded"]):
    pass


class Waiting(ChatMessage["ev.Waiting"]):
    pass


class Readiness(ChatMessage["ev.Readiness"]):
    pass


class Notice(ChatMessage["ev.Notice"]):
    pass


class Failed(ChatMessage["ev.Failed"]):
    pass


class Unsaved(ChatMessage["ev.Unsaved"]):
    pass


class RestoreOffered(ChatMessage["ev.RestoreOffered"]):
    pass


class Succeeded(ChatMessage["ev.Succeeded"]):
    pass


class SessionsChanged(ChatMessage["ev.SessionsChanged"]):
    pass


MESSAGE_FOR: dict[str, type[ChatMessage[Any]]] = {cls.__name__: cls for cls in ChatMessage.__subclasses__()}


def message_for(event: ev.ChatEvent) -> ChatMessage[Any]:
    return MESSAGE_FOR[type(event).__name__](event)
