"""``QuestionPanel``: a question the agent asks, above the composer (not a modal: what you type
stays yours).

Data in: a ``QuestionSpec`` (title, the text or diff it asks about, the answers it offers) and
whether the person was busy typing when it appeared (``Gate``: who a key belongs to). The App
routes each key through ``gate.route`` and calls ``scroll``/``move``/``press``/``attend`` here;
the panel shows the state (ready: its buttons and keys; typing: how to reach it) and how much of
its text is out of view.

Messages out: ``Answered(choice)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Static

from treechat.text.sanitize import sanitize_line

from ..transcript.diff_view import render_diff
from . import messages
from .gate import Attend, Choice, Gate, Press

MAX_DIFF_LINES = 2000
CHROME_ROWS = 14  # the screen's rows besides the question's text: header, composer, status, the panel's frame


@dataclass(frozen=True)
class QuestionSpec:
    """What a question shows and offers."""

    title: str
    body: str = ""
    """The text it asks about (a command, a path, a server's command line), shown whole."""
    diff: str = ""
    """Or a unified diff (an edit, a restore), drawn in colour."""
    note: str = ""
    """A warning under it (what allowing covers, what is kept)."""
    yes: str = "Run"
    no: str = "Refuse"
    session: str | None = "Allow for this session"
    """The third answer (key a), or None when there is none."""
    escape: Choice = "no"
    """What Esc answers once the person is at the question ("later": ask again another time)."""
    keys: str = ""
    """The ready state's key line (default: made from the labels)."""
    asker: str = ""
    """Who asks, when it is not the main agent (shown before the title)."""

    def key_line(self) -> str:
        if self.keys:
            return self.keys
        parts = [f"y {self.yes.lower()}"]
        if self.session:
            parts.append(f"a {self.session[0].lower()}{self.session[1:]}")
        parts.append(f"n {self.no.lower()}")
        parts.append("Esc " + ("not now" if self.escape == "later" else self.no.lower()))
        return " · ".join(parts)


TYPING_HINT = "You are typing: your keys go to your message. Esc (or a click here) moves to this question."


class QuestionPanel(Vertical):
    DEFAULT_CSS = """
    QuestionPanel {
        height: auto; border: round $warning; background: $surface; padding: 0 1; margin: 0 0 0 0;
    }
    QuestionPanel.-typing { border: round $warning 50%; }
    QuestionPanel #q-title { text-style: bold; color: $warning; }
    QuestionPanel #q-body { height: auto; background: $panel; padding: 0 1; }
    QuestionPanel #q-more { color: $warning; text-style: italic; }
    QuestionPanel #q-note { color: $warning; }
    QuestionPanel #q-buttons { height: auto; align-horizontal: right; }
    QuestionPanel Button { margin: 1 0 0 2; min-width: 10; }
    QuestionPanel #q-hint { color: $text-muted; }
    QuestionPanel.-typing #q-hint { color: $warning; text-style: bold; }
    """

    # what it tells the App (question/messages.py, where the App's first frame can name them)
    Answered: TypeAlias = messages.Answered
    Attended: TypeAlias = messages.Attended

    @dataclass
    class _Shown(Message):
        """Posted to itself once drawn: its `time` is when a person could first see the question."""

    def __init__(self, spec: QuestionSpec, *, busy: bool, id: str | None = None) -> None:
        super().__init__(id=id, classes="-typing" if busy else "")
        self.spec = spec
        self.gate = Gate(busy=busy, escape=spec.escape, offers_session=spec.session is not None)
        self.answered = False

    # ------------------------------------------------------------ drawing

    def compose(self) -> ComposeResult:
        title = sanitize_line(self.spec.title, 300)
        if self.spec.asker:
            title = f"{sanitize_line(self.spec.asker, 60)} asks: {title}"
        yield Static(Content(title), id="q-title")
        with VerticalScroll(id="q-body"):
            if self.spec.diff:
                yield Static(render_diff(self.spec.diff, max_lines=MAX_DIFF_LINES))
            elif self.spec.body:
                from .shown import shown_lines

                yield Static(Content("\n").join(shown_lines(self.spec.body)))
            else:
                yield Static("(no textual change)")
        yield Static("", id="q-more")
        if self.spec.note:
            yield Static(Content(sanitize_line(self.spec.note, 800)), id="q-note")
        with Horizontal(id="q-buttons"):
            yield Button(f"{self.spec.no} (n)", id="no", compact=True)
            if self.spec.session:
                yield Button(f"{self.spec.session} (a)", id="session", compact=True)
            yield Button(f"{self.spec.yes} (y)", id="yes", variant="warning", compact=True)
        yield Static("", id="q-hint")

    def on_mount(self) -> None:
        body = self.query_one("#q-body", VerticalScroll)
        self.watch(body, "scroll_y", lambda _: self._show_more(), init=False)
        self._fit()
        self.show_state()
        self.call_after_refresh(lambda: self.post_message(self._Shown()))

    @on(_Shown)
    def _was_shown(self, message: _Shown) -> None:
        message.stop()
        self.gate.shown(message.time)

    def on_resize(self, event: events.Resize) -> None:
        self._fit()
        self.call_after_refresh(self._show_more)

    def _fit(self) -> None:
        rows = self.app.size.height - CHROME_ROWS - (1 if self.spec.note else 0)
        self.query_one("#q-body", VerticalScroll).styles.max_height = max(3, rows)

    def _show_more(self) -> None:
        """How much of the text is out of view, said in lines (the body scrolls)."""
        body = self.query_one("#q-body", VerticalScroll)
        above, below = round(body.scroll_y), round(body.max_scroll_y - body.scroll_y)
        said = []
        if above > 0:
            said.append(f"↑ {above} more line{'s' if above != 1 else ''} above")
        if below > 0:
            said.append(f"↓ {below} more line{'s' if below != 1 else ''} below (PgDn, ↓, the wheel)")
        more = self.query_one("#q-more", Static)
        more.update(" · ".join(said))
        more.display = bool(said)

    def show_state(self) -> None:
        """Ready: its keys, its buttons focusable. Typing: how to reach it."""
        typing = self.gate.state == "typing"
        self.set_class(typing, "-typing")
        for button in self.query(Button):
            button.can_focus = not typing
        self.query_one("#q-hint", Static).update(Content(TYPING_HINT if typing else self.spec.key_line()))
        self.call_after_refresh(self._show_more)

    # ------------------------------------------------------------ acting (the App routes keys here)

    def take_focus(self) -> None:
        """Ready: the focus on the refusing button (Enter alone never says yes)."""
        self.show_state()
        self.screen.set_focus(self.query_one("#no", Button))

    def scroll(self, action: str) -> None:
        getattr(self.query_one("#q-body", VerticalScroll), f"action_{action}")()

    def move(self, step: int) -> None:
        buttons = list(self.query(Button))
        focused = self.screen.focused
        at = buttons.index(focused) if focused in buttons else 0
        self.screen.set_focus(buttons[(at + step) % len(buttons)])

    def press(self) -> None:
        """Enter: the focused button's answer (the refusing one if none is focused)."""
        focused = self.screen.focused
        self.answer(_choice_of(focused.id if isinstance(focused, Button) and focused in self.query(Button) else "no"))

    def answer(self, choice: Choice) -> None:
        if self.answered:
            return
        self.answered = True
        self.post_message(self.Answered(self, choice))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        route = self.gate.click(event.time)
        if isinstance(route, Press):
            self.answer(_choice_of(event.button.id))
        elif isinstance(route, Attend):
            self.post_message(self.Attended(self))

    def on_click(self, event: events.Click) -> None:
        if self.gate.state == "typing":
            event.stop()
            self.gate.attend(event.time)
            self.post_message(self.Attended(self))



_BUTTONS: dict[str, Choice] = {"yes": "yes", "session": "session", "no": "no"}


def _choice_of(button_id: str | None) -> Choice:
    return _BUTTONS.get(button_id or "", "no")
