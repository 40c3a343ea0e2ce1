"""SessionsScreen (Ctrl+R): every session, forks and sub-agents' sessions under their parent, type to filter.

``SessionsScreen(sessions, current_id=None, now=None)`` — ``sessions`` are
``storage.base.SessionSummary`` rows (newest first); ``now`` pins "age" (tests).
``set_sessions(sessions)`` refreshes the list (e.g. after the App renamed one).

Ends with ``dismiss(choice)``: ``SessionsScreen.Resume(session_id)``, ``SessionsScreen.New()``
or None (Escape). Stays open and posts: ``Rename(session_id, name)`` (r/F2, inline input) and
``Delete(session_id)`` (d/Ctrl+D, after a ConfirmDialog). The screen updates its own list
optimistically; the App does the storage work.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeAlias

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from treechat.storage.base import SessionSummary, threaded
from treechat.text.sanitize import sanitize_line

from .. import screen_messages
from ..keymap import bindings_for
from .base import Dialog
from .dialogs import ConfirmDialog


def age(iso: str, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max((now - then).total_seconds(), 0)
    for size, unit in ((86400 * 365, "y"), (86400 * 30, "mo"), (86400 * 7, "w"), (86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def title_of(s: SessionSummary) -> str:
    return sanitize_line(s.name or s.first_message or s.id[:8], 60)


@dataclass(frozen=True)
class ResumeSession:
    """What ``SessionsScreen`` is dismissed with (``SessionsScreen.Resume``): resume this session (Enter)."""

    session_id: str
    """The session."""


@dataclass(frozen=True)
class NewSession:
    """What ``SessionsScreen`` is dismissed with (``SessionsScreen.New``): a new session (n)."""


class SessionsScreen(Dialog[ResumeSession | NewSession]):
    BINDINGS = bindings_for("sessions")

    Resume: TypeAlias = ResumeSession
    New: TypeAlias = NewSession
    # what it tells the App while it stays open (widgets/screen_messages.py, where the App's first frame can name them)
    Rename: TypeAlias = screen_messages.Rename
    Delete: TypeAlias = screen_messages.Delete

    def __init__(self, sessions: list[SessionSummary], current_id: str | None = None, now: datetime | None = None) -> None:
        super().__init__()
        self.sessions = list(sessions)
        self.current_id = current_id
        self.now = now
        self._renaming: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Sessions", id="title")
            yield Input(placeholder="type to filter", id="filter")
            yield OptionList(id="sessions")
            yield Input(placeholder="new name (Enter saves, Esc cancels)", id="rename", select_on_focus=False)
            yield Static("Enter resume · n new · r rename · d delete · Esc close (n/r/d when the list has focus)", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#rename").display = False
        self._fill()
        self.query_one("#filter", Input).focus()

    def set_sessions(self, sessions: list[SessionSummary]) -> None:
        self.sessions = list(sessions)
        self._fill()

    def _fill(self) -> None:
        words = self.query_one("#filter", Input).value.lower().split()
        now = self.now or datetime.now(UTC)
        options = self.query_one("#sessions", OptionList)
        keep = self.selected_id
        options.clear_options()
        for s, depth in threaded(self.sessions):
            hay = f"{s.name or ''} {s.first_message} {s.id}".lower()
            if not all(w in hay for w in words):
                continue
            indent = "  " * depth + ("⑂ " if depth else "")
            mark = "● " if s.id == self.current_id else "  "
            detail = f"  {age(s.modified_at, now)} · {s.message_count} msgs · ${s.cost_total:.2f}"
            options.add_option(Option(Content.assemble(mark, indent, (title_of(s), "bold"), (detail, "dim")), id=s.id))
        if options.option_count:
            ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
            options.highlighted = ids.index(keep) if keep in ids else 0

    @property
    def selected_id(self) -> str | None:
        options = self.query_one("#sessions", OptionList)
        if options.highlighted is None or options.option_count == 0:
            return None
        return options.get_option_at_index(options.highlighted).id

    # ------------------------------------------------------------ events

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "rename":
            self._finish_rename(event.value.strip())
        else:
            self.action_resume()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.Resume(event.option.id))

    def on_key(self, event: events.Key) -> None:
        if self._renaming and event.key == "escape":
            event.stop()
            self._finish_rename(None)
            return
        if self.focused is self.query_one("#filter"):
            self.steer_list_from_input(event, self.query_one("#sessions", OptionList))

    # ------------------------------------------------------------ actions

    def action_resume(self) -> None:
        if self.selected_id is not None:
            self.dismiss(self.Resume(self.selected_id))

    def action_new(self) -> None:
        self.dismiss(self.New())

    def action_rename(self) -> None:
        session = next((s for s in self.sessions if s.id == self.selected_id), None)
        if session is None:
            return
        self._renaming = session.id
        box = self.query_one("#rename", Input)
        box.value = session.name or ""
        box.cursor_position = len(box.value)
        box.display = True
        box.focus()

    def _finish_rename(self, name: str | None) -> None:
        session_id, self._renaming = self._renaming, None
        self.query_one("#rename").display = False
        if session_id is not None and name is not None:
            self.post_message(self.Rename(session_id, name))
            self.sessions = [_renamed(s, name) if s.id == session_id else s for s in self.sessions]
            self._fill()
        self.query_one("#sessions").focus()

    def action_delete(self) -> None:
        session = next((s for s in self.sessions if s.id == self.selected_id), None)
        if session is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.post_message(self.Delete(session.id))
                self.sessions = [s for s in self.sessions if s.id != session.id]
                self._fill()

        self.app.push_screen(ConfirmDialog(f"Delete session “{title_of(session)}”?", "This cannot be undone.",
                                           yes="Delete", danger=True), confirmed)


def _renamed(s: SessionSummary, name: str) -> SessionSummary:
    from dataclasses import replace

    return replace(s, name=name or None)
