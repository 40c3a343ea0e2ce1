"""What the sessions list tells the App while it stays open (``SessionsScreen.Rename``,
``SessionsScreen.Delete``), apart from the dialogs, which load on first use: the App names them
in its ``@on`` handlers from its first frame."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class Rename(Message, namespace="sessions_screen"):
    """Rename a session (r or F2: the name typed in the list)."""

    session_id: str
    """The session."""

    name: str
    """Its new name."""


@dataclass
class Delete(Message, namespace="sessions_screen"):
    """Delete a session (d or Ctrl+D, once confirmed)."""

    session_id: str
    """The session."""
