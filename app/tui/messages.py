"""The one Textual message the controller's events arrive in (`treechat.chat.events.ChatEvent`).

The App's listener wraps each event (a `ChatDelta` of what changed in one turn of the event
loop, or a discrete event) in a `ChatMessage` and posts it to itself, so every screen update
happens in the App's message loop, in the order the controller told them; the view (view/)
dispatches on the event with `match`. Tests watch them with `message_hook` and assert on `.event`.

The events are not imported at run time here: the App's handlers are defined in the first
frame, before the controller and its events load (app/tui/startup/).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from treechat.chat.events import ChatEvent


@dataclass
class ChatMessage(Message):
    """A controller event, delivered in the App's message loop."""

    event: ChatEvent
    """What the controller told (a `ChatDelta` of one turn, or a discrete event)."""
