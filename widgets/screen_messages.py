"""What a dialog tells the App while it stays open: the sessions list's ``SessionsScreen.Rename``
and ``SessionsScreen.Delete`` (the same classes). Apart from the dialogs (``widgets/screens/``,
which load on first use) so the App's first frame can name them in its ``@on`` handlers."""

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
