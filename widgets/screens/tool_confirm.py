"""``ToolConfirmDialog``: the confirmation a tool asks for (the bash tool's command), which typing
cannot answer.

It appears when the model decides, not when the user asks, so the user may be typing in the composer
at that moment. Hence:

- keys and pastes that were typed before it was on screen (their events are stamped earlier than its
  first paint) are not its answers: they are handed back to the screen below (the composer) when it
  closes;
- for its first ``ARM_DELAY`` seconds, and while keys keep coming less than ``ARM_DELAY`` apart,
  every key and click is ignored (the hint line says so): an answer needs a pause first;
- a key that is not an answer (anything but y, a, n, Esc and Enter) is someone typing: it is
  ignored and the quiet period starts again, however long the pause before it was ("wait I have
  a question", typed with pauses between the words, must not reach its ``a``: issue 21); Tab and
  the arrows still move between the buttons after a pause, and start the quiet period again;
- Enter presses the focused button, which starts on the refusing one: Enter alone never approves;
- the command is shown with every control character as a visible placeholder (nothing hidden);
- ``y`` (or a click on the run button) approves, ``a`` (or its button) approves and allows this
  exact command for the rest of the session, ``n``/Escape refuse.

Dismisses with True (run), False (refuse) or ``ALLOW_SESSION`` (run, and do not ask again for this
command in this session: the caller remembers that).
"""

from __future__ import annotations

from typing import Literal

from textual import events, on
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Button, Static

from treechat.text.sanitize import visible

from .dialogs import ConfirmDialog

AllowSession = Literal["session"]
ALLOW_SESSION: AllowSession = "session"
ToolAnswer = bool | AllowSession

HINT = "y runs it · a runs it and allows this exact command for this session · n or Esc refuses"
READ_HINT = "y allows it · a allows this path for this session · n or Esc refuses"
IGNORED = "Typing is ignored here. Pause, then press y, a or n."
ANSWER_KEYS = frozenset({"y", "a", "n", "escape", "enter"})
MOVES = frozenset({"tab", "shift+tab", "left", "right"})  # between the buttons: allowed, but not an answer


class ToolConfirmDialog(ConfirmDialog):
    ARM_DELAY = 0.5  # seconds of quiet (on screen, and since the last key) before an answer counts
    ALLOW_SESSION = ALLOW_SESSION

    DEFAULT_CSS = """
    ToolConfirmDialog #hint.-ignored { color: $warning; text-style: bold; }
    ToolConfirmDialog > #dialog { min-width: 78; }
    ToolConfirmDialog Button { margin-left: 1; }
    """

    BINDINGS = [Binding("a", "allow_session", "Allow for this session")]

    def __init__(self, title: str, body: str = "", *, yes: str = "Run", no: str = "Refuse",
                 allow: str = "Allow for this session", hint: str = HINT) -> None:
        super().__init__(title, body, yes=yes, no=no, danger=True)  # danger: the refusing button has focus
        self.allow, self.hint_text = allow, hint
        self.shown_at = float("inf")  # until mounted, every input is "before it was on screen"
        self.last_ignored = float("-inf")
        self.early: list[events.Key | events.Paste] = []

    def shown_body(self) -> str:
        # what will run, every byte of it: an escape sequence or a bidi override in a command is
        # shown as a placeholder ("␛", "<U+202E>") rather than silently left out
        return visible(self.body)

    def buttons(self) -> list[Button]:
        no, yes = super().buttons()
        return [no, Button(f"{self.allow} (a)", id="session"), yes]

    def hint(self) -> str:
        return self.hint_text

    class Shown(Message):
        """Posted by the dialog to itself once it has been drawn: its `time` (the clock of every
        input event's `time`) is when a person could first see it."""

    @on(events.Mount)
    def wait_for_first_paint(self) -> None:
        self.call_after_refresh(lambda: self.post_message(self.Shown()))

    @on(Shown)
    def remember_when_shown(self, message: Shown) -> None:
        message.stop()
        self.shown_at = message.time
        # input held while this was being drawn but typed after it was: ignored, not given back
        late = [held for held in self.early if held.time >= self.shown_at]
        if late:
            self.early = [held for held in self.early if held.time < self.shown_at]
            self.last_ignored = max(held.time for held in late)

    # ------------------------------------------------------------ the guard

    def settled(self, at: float) -> bool:
        """Can an input made at `at` answer? Only after ARM_DELAY on screen and ARM_DELAY without
        an ignored key: someone still typing is not answering."""
        return at - self.shown_at >= self.ARM_DELAY and at - self.last_ignored >= self.ARM_DELAY

    def on_key(self, event: events.Key) -> None:
        # The key reaches the focused button, then this screen, and only then the App, which looks
        # up the bindings (y, n, Enter on the button): stopping it here keeps it from answering.
        if event.time < self.shown_at:
            self._hold(event)
        elif self.settled(event.time) and event.key in MOVES:
            self.last_ignored = max(self.last_ignored, event.time)  # it moves the focus; Enter waits for a pause
        elif not self.settled(event.time) or event.key not in ANSWER_KEYS:
            self._ignore(event)

    def on_paste(self, event: events.Paste) -> None:
        if event.time < self.shown_at:
            self._hold(event)
        else:
            self._ignore(event)  # a paste is never an answer

    def _hold(self, event: events.Key | events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.early.append(event)

    def _ignore(self, event: events.Key | events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.last_ignored = max(self.last_ignored, event.time)
        hint = self.query_one("#hint", Static)
        hint.update(IGNORED)
        hint.add_class("-ignored")

    # ------------------------------------------------------------ answers

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        event.prevent_default()  # ConfirmDialog's own handler would answer at once
        if not self.settled(event.time):
            return
        answers: dict[str, ToolAnswer] = {"yes": True, "session": ALLOW_SESSION}
        self.dismiss(answers.get(event.button.id or "", False))

    def action_allow_session(self) -> None:
        self.dismiss(ALLOW_SESSION)

    def dismiss(self, result: ToolAnswer | None = None) -> AwaitComplete:
        waiting = super().dismiss(result)
        self._give_back_early_input()
        return waiting

    def _give_back_early_input(self) -> None:
        """What was typed before this appeared goes where it was going: the screen below, which is
        active again now. Re-stamped with its first time, so another confirmation that is up by the
        time it is handled hands it back too."""
        for early in self.early:
            again: events.Key | events.Paste
            again = events.Key(early.key, early.character) if isinstance(early, events.Key) else events.Paste(early.text)
            again.time = early.time
            self.app.post_message(again)
        self.early.clear()
