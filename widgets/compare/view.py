"""CompareView: the replies of one prompt sent to several models, side by side as they stream.

``CompareView(columns)``: one column per run, ``(run id, model name)`` in the order the models were
given. The feature that opened it feeds it (``set_reply(run, text)``, ``set_state(run, state,
detail)``); it never reads the controller. Wide enough (``MIN_COLUMN`` cells a column), every column
shows at once; narrower (80 columns), one at a time with the others named on a switcher line.
←/→ (or Tab / Shift+Tab) move between the columns; Enter chooses the one in focus: the view is
dismissed with ``CompareView.Chosen(run)``; Esc closes it with None (nothing chosen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Static

from treechat.text.sanitize import sanitize, sanitize_line

from ..keymap import bindings_for

State = Literal["waiting", "streaming", "done", "failed"]
MIN_COLUMN = 50  # narrower than this a column is hard to read: one at a time
DRAW_EVERY = 0.1  # seconds: a streaming column is drawn at most this often
_MARKS: dict[State, str] = {"waiting": "… waiting", "streaming": "● streaming", "done": "✓ done", "failed": "✗ failed"}


@dataclass(frozen=True)
class Chosen:
    """What ``CompareView`` is dismissed with when a reply is chosen (Enter)."""

    run: str  # the run whose branch the person takes


class _Column(Vertical):
    """One reply: its model and state on top, its text below."""

    DEFAULT_CSS = """
    _Column { width: 1fr; height: 1fr; border: round $panel; padding: 0 1; }
    _Column.-focus { border: round $accent; }
    _Column > .head { height: 1; text-style: bold; }
    _Column > VerticalScroll { height: 1fr; }
    """

    def __init__(self, run: str, model: str) -> None:
        super().__init__(id=f"run-{run}")
        self.run, self.model = run, model
        self.state: State = "waiting"
        self.detail = ""
        self._pending: str | None = None  # text told and not drawn yet
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="head")
        with VerticalScroll():
            yield Static("", classes="body")

    def on_mount(self) -> None:
        self._head()

    def _head(self) -> None:
        style = {"failed": "$error", "done": "$success", "streaming": "$accent", "waiting": "$text-muted"}[self.state]
        detail = f" · {sanitize_line(self.detail, 120)}" if self.detail else ""
        self.query_one(".head", Static).update(Content.assemble(
            (sanitize_line(self.model, 60), "bold"), "  ", (_MARKS[self.state], style), (detail, "dim")))

    def set_text(self, text: str) -> None:
        """The reply as far as it came: drawn at most every DRAW_EVERY seconds (each draw wraps the
        whole text again, and a reply is told once per network read)."""
        self._pending = text
        if self._timer is None:
            self._timer = self.set_timer(DRAW_EVERY, self.flush)

    def flush(self) -> None:
        """Draw the text told last, now."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        text, self._pending = self._pending, None
        if text is None:
            return
        scroll = self.query_one(VerticalScroll)
        at_end = scroll.scroll_y >= scroll.max_scroll_y - 1
        self.query_one(".body", Static).update(Content(sanitize(text)))
        if at_end:
            scroll.scroll_end(animate=False)  # it follows the reply unless the person scrolled up

    def set_state(self, state: State, detail: str = "") -> None:
        self.flush()  # a reply that ended is shown whole at once
        self.state, self.detail = state, detail
        self._head()


class CompareView(ModalScreen["Chosen | None"]):
    DEFAULT_CSS = """
    CompareView { background: $background 70%; }
    CompareView > #compare { width: 100%; height: 100%; background: $surface; }
    CompareView #title { height: 1; text-style: bold; color: $accent; padding: 0 1; }
    CompareView #switcher { height: 1; padding: 0 1; }
    CompareView #columns { height: 1fr; }
    CompareView #columns.-one > _Column { display: none; }
    CompareView #columns.-one > _Column.-focus { display: block; }
    CompareView .hint { height: 1; color: $text-muted; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings_for("compare")

    Chosen = Chosen

    def __init__(self, columns: list[tuple[str, str]], title: str = "") -> None:
        super().__init__()
        self.columns = list(columns)
        self.title_text = title
        self.focused_index = 0
        self._texts: dict[str, str] = {}
        self._states: dict[str, tuple[State, str]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="compare"):
            yield Static(Content(sanitize_line(self.title_text or "Compare", 200)), id="title")
            yield Static("", id="switcher")
            with Horizontal(id="columns"):
                for run, model in self.columns:
                    yield _Column(run, model)
            yield Static("←/→ Tab: switch · Enter: take this reply (the leaf goes there) · Esc: close", classes="hint")

    def on_mount(self) -> None:
        for column in self.query(_Column):
            if column.run in self._texts:
                column.set_text(self._texts[column.run])
            if column.run in self._states:
                column.set_state(*self._states[column.run])
        self._lay_out()

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out()

    @property
    def one_at_a_time(self) -> bool:
        return self.size.width < MIN_COLUMN * max(len(self.columns), 1)

    def _lay_out(self) -> None:
        one = self.one_at_a_time
        self.query_one("#columns").set_class(one, "-one")
        for i, column in enumerate(self.query(_Column)):
            column.set_class(i == self.focused_index, "-focus")
        self._switcher()

    def _switcher(self) -> None:
        parts: list[str | tuple[str, str]] = []
        for i, column in enumerate(self.query(_Column)):
            name = f" {i + 1} {sanitize_line(column.model, 30)} {_MARKS[column.state].split()[0]} "
            parts.append((name, "reverse bold") if i == self.focused_index else name)
        self.query_one("#switcher", Static).update(Content.assemble(*parts))

    def _column(self, run: str) -> _Column | None:
        return next((c for c in self.query(_Column) if c.run == run), None)

    # ------------------------------------------------------------ fed by the feature

    def set_reply(self, run: str, text: str) -> None:
        self._texts[run] = text  # (kept: what comes before the view is mounted is shown when it is)
        column = self._column(run) if self.is_mounted else None
        if column is not None:
            column.set_text(text)

    def set_state(self, run: str, state: State, detail: str = "") -> None:
        self._states[run] = (state, detail)
        column = self._column(run) if self.is_mounted else None
        if column is not None and (column.state, column.detail) != (state, detail):
            column.set_state(state, detail)
            self._switcher()

    # ------------------------------------------------------------ keys

    def action_next(self) -> None:
        self._focus(self.focused_index + 1)

    def action_previous(self) -> None:
        self._focus(self.focused_index - 1)

    def _focus(self, index: int) -> None:
        self.focused_index = index % max(len(self.columns), 1)
        self._lay_out()

    @property
    def focused_run(self) -> str | None:
        return self.columns[self.focused_index][0] if self.columns else None

    def action_choose(self) -> None:
        run = self.focused_run
        if run is not None:
            self.dismiss(Chosen(run))

    def action_close(self) -> None:
        self.dismiss(None)
