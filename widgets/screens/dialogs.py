"""Small dialogs: ``ConfirmDialog`` (quit, delete) and ``LabelDialog``.

``ConfirmDialog(title, body="", yes="Yes", no="No", danger=False)`` dismisses with True/False
(y/Enter = yes; n/Escape = no). The body is untrusted text (e.g. a command a model wants to run):
it is sanitized and shown verbatim, never as markup. For a confirmation that appears without the
user asking (a tool's command), ask through the App's questions (``treechat.widgets.question``):
typing cannot answer those.

``LabelDialog(current=None, target="")`` dismisses with the new label ("" = clear it) or None
when cancelled.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Input, Static

from treechat.text.sanitize import sanitize, sanitize_line

from .base import Dialog


class ConfirmDialog(Dialog[bool]):
    DEFAULT_CSS = """
    ConfirmDialog #body { max-height: 20; overflow-y: auto; background: $panel; padding: 0 1; }
    ConfirmDialog #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmDialog Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, body: str = "", *, yes: str = "Yes", no: str = "No", danger: bool = False) -> None:
        super().__init__()
        self.title_text, self.body, self.yes, self.no, self.danger = title, body, yes, no, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(sanitize_line(self.title_text, 200)), id="title")
            if self.body:
                yield Static(Content(self.shown_body()), id="body")
            with Horizontal(id="buttons"):
                yield from self.buttons()
            hint = self.hint()
            if hint:
                yield Static(Content(hint), id="hint", classes="hint")

    def shown_body(self) -> str:
        return sanitize(self.body)

    def buttons(self) -> list[Button]:
        """The answers, left to right (a subclass may add its own)."""
        return [Button(f"{self.no} (n)", id="no"),
                Button(f"{self.yes} (y)", id="yes", variant="error" if self.danger else "primary")]

    def hint(self) -> str:
        """A line under the buttons ("" for none)."""
        return ""

    def on_mount(self) -> None:
        self.query_one("#no" if self.danger else "#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class LabelDialog(Dialog[str]):
    def __init__(self, current: str | None = None, target: str = "") -> None:
        super().__init__()
        self.current, self.target = current or "", target

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content("Label " + (f"“{sanitize_line(self.target, 60)}”" if self.target else "this entry")), id="title")
            yield Input(self.current, placeholder="label (empty clears it)", id="label", select_on_focus=False)
            yield Static("Enter saves · Esc cancels", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())
