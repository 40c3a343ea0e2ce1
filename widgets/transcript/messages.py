"""What the transcript asks of the App (``Transcript.SiblingRequested`` and the rest: the same classes).

Kept apart from the widget so the App can name them in its ``@on`` handlers from its first frame,
which is drawn before the transcript's module loads (app/tui/startup/). Handled as
``on_transcript_<name>`` too (the namespace), as if they were defined in ``Transcript``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class SiblingRequested(Message, namespace="transcript"):
    """Switch to a sibling of an entry (‹ ›, or ``[`` / ``]``)."""

    entry_id: str
    """The message whose sibling is wanted."""

    delta: int
    """-1: the previous sibling, 1: the next."""


@dataclass
class ExpandCompaction(Message, namespace="transcript"):
    """A compaction card was opened: the App hands in what it replaced (``Transcript.show_originals``)."""

    entry_id: str
    """The compaction entry."""


@dataclass
class LoadOlder(Message, namespace="transcript"):
    """Scrolled to the top of the first item: the App may ``prepend_messages`` older ones."""


@dataclass
class EntryRequest(Message):
    """Base of the requests about the selected message (each is handled by its own class)."""

    entry_id: str
    """The selected message's entry."""


@dataclass
class EditRequested(EntryRequest, namespace="transcript"):
    """Edit and resend this prompt: exactly what choosing it in the tree does."""


@dataclass
class SubagentRequested(EntryRequest, namespace="transcript"):
    """Open the session of the sub-agent whose `task` result this is (Enter or o on it)."""


@dataclass
class RetryRequested(EntryRequest, namespace="transcript"):
    """Ask again for this reply; the new reply becomes its sibling."""


@dataclass
class ForkRequested(EntryRequest, namespace="transcript"):
    """Fork a new session from this entry."""


@dataclass
class LabelRequested(EntryRequest, namespace="transcript"):
    """Ask for a label for this entry."""


@dataclass
class CopyRequested(Message, namespace="transcript"):
    """Put text on the clipboard (a message, or one of its code blocks)."""

    text: str
    """What is copied."""

    what: str
    """Its name for the notice ("the reply", "code block 2 of 3")."""
