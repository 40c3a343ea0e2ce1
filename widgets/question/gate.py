"""Who a key belongs to while the agent asks a question: the question, or the message being typed.

A question (run this command? apply this edit? start this project's servers?) appears when the
agent decides, not when the person asks, so they may be typing at that moment — and with natural
pauses between words. No rule about time can tell a pause for thought from a decision, so the
rule here is about what the person did, in order:

- **ready**: the person has typed nothing since they handed over (sent the prompt that started the
  run, moved in the tree, started the app) and their composer is empty. The question has the
  focus; after a short moment on screen, one key answers (y, a, n; Esc as the question says).
  Scroll keys read it, Tab and ←/→ move between its buttons and Enter presses the focused one
  (the refusing one to begin with). Any other key means they are typing: the question lets go.
- **typing**: every key goes where it was going (the composer: it is kept, Enter sends it as a
  steer); nothing answers. Only a deliberate act reaches the question: Esc (or a click on it).

So no sequence of printable keys, Enter, Backspace or ↑/↓ typed after a question appeared, at any
rhythm, answers it "yes" — except a first key y or a from a person who had not been typing, which
is the one-key answer. Time only makes this stricter: a key in the first `ARM_DELAY` seconds on
screen (or after Esc) cannot have been a reaction to it, so it counts as typing too.

Pure logic, no Textual: the App feeds it keys (`route`), the panel shows its state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Choice = Literal["yes", "session", "no", "later"]
State = Literal["ready", "typing"]

ANSWER_KEYS: dict[str, Choice] = {"y": "yes", "a": "session", "n": "no"}
SCROLL_KEYS: dict[str, str] = {"up": "scroll_up", "down": "scroll_down", "pageup": "page_up",
                               "pagedown": "page_down", "home": "scroll_home", "end": "scroll_end"}
MOVE_KEYS: dict[str, int] = {"tab": 1, "right": 1, "shift+tab": -1, "left": -1}
ARM_DELAY = 0.5  # seconds on screen (or since Esc) before a key can be an answer


@dataclass(frozen=True)
class Answer:
    """The key answers the question."""
    choice: Choice
    kind: Literal["answer"] = "answer"


@dataclass(frozen=True)
class Press:
    """Enter: press the question's focused button."""
    kind: Literal["press"] = "press"


@dataclass(frozen=True)
class Scroll:
    """Read on: scroll the question's text (`action` is the scroll action's name)."""
    action: str
    kind: Literal["scroll"] = "scroll"


@dataclass(frozen=True)
class Move:
    """Move the focus between the question's buttons."""
    step: int
    kind: Literal["move"] = "move"


@dataclass(frozen=True)
class Attend:
    """Esc while typing: the person moves to the question (it takes the focus, ready to answer)."""
    kind: Literal["attend"] = "attend"


@dataclass(frozen=True)
class Typing:
    """The key is typing: it goes on where it was going (the composer), and the question lets go."""
    kind: Literal["typing"] = "typing"


Route = Answer | Press | Scroll | Move | Attend | Typing


class Gate:
    """The state of one question on screen. `busy`: the person had typed since they handed over,
    or has a draft in the composer, when it appeared."""

    def __init__(self, *, busy: bool, escape: Choice = "no", offers_session: bool = True,
                 arm_delay: float | None = None) -> None:
        self.state: State = "typing" if busy else "ready"
        self.escape = escape
        self.offers_session = offers_session
        self.arm_delay = ARM_DELAY if arm_delay is None else arm_delay
        self.armed_from = float("inf")  # until it is on screen, nothing is a reaction to it

    def shown(self, at: float) -> None:
        """It was drawn at `at` (the clock of input events): a person could first see it then."""
        self.armed_from = at + self.arm_delay

    def attend(self, at: float) -> None:
        """The person moved to the question (Esc while typing, a click on it)."""
        self.state = "ready"
        self.armed_from = max(self.armed_from, at + self.arm_delay)

    def route(self, key: str, at: float) -> Route:
        """Where `key`, typed at `at`, goes. Answers only in the ready state, and only after the
        question has been on screen for a moment."""
        if self.state == "typing":
            return Attend() if key == "escape" else Typing()
        if key in SCROLL_KEYS:
            return Scroll(SCROLL_KEYS[key])  # reading it is never an answer, nor typing
        if key == "escape":
            return Answer(self.escape)  # refusing (or "not now") is never consent: no pause needed
        if at < self.armed_from:
            return self._typing()  # too soon to be a reaction to it: someone was typing
        if key in MOVE_KEYS:
            return Move(MOVE_KEYS[key])
        if key == "enter":
            return Press()
        choice = ANSWER_KEYS.get(key)
        if choice is None or (choice == "session" and not self.offers_session):
            return self._typing()
        return Answer(choice)

    def click(self, at: float) -> Press | Attend | None:
        """A click on one of its buttons: pressed when ready (after the moment on screen); while
        typing, the click is the deliberate act that moves the person to the question."""
        if self.state == "typing":
            self.attend(at)
            return Attend()
        return Press() if at >= self.armed_from else None

    def paste(self) -> Typing:
        """A paste is never an answer: it is typing."""
        return self._typing()

    def let_go(self) -> None:
        """The person is doing something else (typing, another screen): nothing answers until they
        move to the question again."""
        self.state = "typing"

    def _typing(self) -> Typing:
        self.let_go()
        return Typing()
