"""Helpers for tests of the agent's questions (app/tui/questions.py): is one up and drawn, answer
it as a person does (after it has been on screen a moment), keys stamped as a person types them."""

from __future__ import annotations

import time
from typing import Any

from textual import events

from treechat.widgets.question.panel import QuestionPanel

from .conftest import screen_text, wait_for


def asking(app: Any, words: str = "") -> QuestionPanel | None:
    """The question on screen (drawn: a person could see it) whose text shows `words`, or None."""
    panel = app.questions.panel
    if panel is None or panel.answered or panel.gate.armed_from == float("inf"):
        return None
    return panel if words in screen_text(app) else None


async def wait_asking(pilot: Any, app: Any, words: str = "", *, what: str = "the question",
                      rounds: int = 400) -> QuestionPanel:
    await wait_for(pilot, lambda: asking(app, words) is not None, what=what, rounds=rounds)
    panel = asking(app, words)
    assert panel is not None
    return panel


async def settle(pilot: Any, panel: QuestionPanel) -> None:
    """Until a key can answer it (its moment on screen is over): a condition, not a fixed sleep."""
    while time.monotonic() < panel.gate.armed_from:
        await pilot.pause(max(0.01, panel.gate.armed_from - time.monotonic()))
    await pilot.pause()


async def answer(pilot: Any, app: Any, key: str) -> None:
    """A person who has been reading the question presses `key`."""
    panel = app.questions.panel
    assert panel is not None, "no question to answer"
    await settle(pilot, panel)
    await pilot.press(key)


def typed(text: str, start: float, *, per_key: float = 0.08, between_words: float = 0.6) -> list[events.Key]:
    """Keys as a person types them, stamped with when they were typed (the gate decides by order,
    and by the stamps only for its first moment on screen, so this does not depend on the machine)."""
    keys, at = [], start
    for ch in text:
        at += between_words if ch == " " else per_key
        key = events.Key("space" if ch == " " else ch, ch)
        key.time = at
        keys.append(key)
    return keys
