"""``ChangeConfirmDialog``: a change to files shown as a diff, answered like the bash confirmation
(``ToolConfirmDialog``: keys typed as it appeared are not answers, nothing counts before a pause,
Enter presses the refusing button).

Used for an edit or write the model wants to make (Apply / Refuse / Allow edits for this
session; a change outside the working folder has no session choice: it is asked every time) and
for restoring files when the leaf moves (Restore / Keep the files, no session choice). The diff
scrolls with PgUp/PgDn, ↑/↓, Home/End and the wheel; those keys are never answers.

Dismisses with True, False, or ``ALLOW_SESSION`` (only when ``allow`` was given).
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from treechat.text.sanitize import sanitize_line

from ..transcript.diff_view import render_diff
from .tool_confirm import ToolConfirmDialog

EDIT_HINT = "y applies it · a applies it and allows edits for this session · n or Esc refuses"
SCROLL_KEYS = {"pageup": "page_up", "pagedown": "page_down", "up": "scroll_up", "down": "scroll_down",
               "home": "scroll_home", "end": "scroll_end"}
_CHROME_ROWS = 12  # the dialog's rows besides the diff: border, title, note, buttons, hint, margins
MAX_DIFF_LINES = 2000


class ChangeConfirmDialog(ToolConfirmDialog):
    DEFAULT_CSS = """
    ChangeConfirmDialog > #dialog { max-height: 100%; min-width: 78; }
    ChangeConfirmDialog Button { margin-left: 1; }
    ChangeConfirmDialog #diff { height: auto; background: $panel; padding: 0 1; }
    ChangeConfirmDialog #note { color: $warning; margin-top: 1; }
    """

    def __init__(self, title: str, diff: str, *, note: str = "", yes: str = "Apply", no: str = "Refuse",
                 allow: str | None = "Allow edits for this session", hint: str | None = None) -> None:
        super().__init__(title, "", yes=yes, no=no, allow=allow or "")
        self.diff, self.note, self.offers_session = diff, note, allow is not None
        self.hint_line = hint if hint is not None else (
            EDIT_HINT if self.offers_session else f"y: {yes} · n or Esc: {no}")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(sanitize_line(self.title_text, 200)), id="title")
            with VerticalScroll(id="diff"):
                yield Static(render_diff(self.diff, max_lines=MAX_DIFF_LINES) if self.diff else "(no textual change)")
            if self.note:
                yield Static(Content(sanitize_line(self.note, 600)), id="note")
            with Horizontal(id="buttons"):
                yield from self.buttons()
            yield Static(Content(self.hint_line), id="hint", classes="hint")

    def buttons(self) -> list[Button]:
        both = super().buttons()
        return both if self.offers_session else [b for b in both if b.id != "session"]

    def hint(self) -> str:
        return self.hint_line

    def on_mount(self) -> None:  # (Textual calls each class's own handler: ConfirmDialog's focuses Refuse)
        self._fit(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(self.app.size.height)

    def _fit(self, rows: int) -> None:
        self.query_one("#diff", VerticalScroll).styles.max_height = max(3, rows - _CHROME_ROWS - (2 if self.note else 0))

    def on_key(self, event: events.Key) -> None:
        scroll = SCROLL_KEYS.get(event.key)
        if scroll is not None and event.time >= self.shown_at:  # reading the diff is not answering
            event.stop()
            event.prevent_default()
            getattr(self.query_one("#diff", VerticalScroll), f"action_{scroll}")()
        # anything else goes on to ToolConfirmDialog's own on_key (the guard): Textual calls it next

    def action_allow_session(self) -> None:
        if self.offers_session:
            super().action_allow_session()
