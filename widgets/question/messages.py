"""What a question panel tells the App (``QuestionPanel.Answered``, ``QuestionPanel.Attended``).

Kept apart from the panel, which loads when the first question is asked, so the App can name
them in its ``@on`` handlers from its first frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from .gate import Choice
    from .panel import QuestionPanel


@dataclass
class Answered(Message, namespace="question_panel"):
    """The person answered."""

    panel: QuestionPanel
    """The question answered."""

    choice: Choice
    """yes, session (yes, and for the session), no or later."""


@dataclass
class Attended(Message, namespace="question_panel"):
    """The person moved to the question (a click on it while typing): the App gives it the focus."""

    panel: QuestionPanel
    """The question moved to."""
