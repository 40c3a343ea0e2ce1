"""The controller's one error: what a person asked for cannot be done, in one sentence."""

from __future__ import annotations


class ChatError(Exception):
    """Something the user asked for cannot be done; the message is the one sentence to show."""
