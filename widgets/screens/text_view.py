"""TextDialog: a long plain text to read (e.g. the effective system prompt); Esc or q closes.

The text may hold file contents (AGENTS.md) or anything else untrusted: it is sanitized and shown
as plain text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from treechat.text.sanitize import sanitize, sanitize_line

from .base import Dialog


class TextDialog(Dialog[None]):
    DEFAULT_CSS = """
    TextDialog > #dialog { height: 85%; }
    TextDialog #text { padding: 0 1; }
    """

    BINDINGS = [Binding("q", "close", "Close")]  # Escape closes every Dialog

    def __init__(self, title: str, text: str, *, follow: Callable[[], str] | None = None) -> None:
        """`follow`: the text is read again from it while the dialog is open (a state that changes:
        servers starting)."""
        super().__init__()
        self.title_text, self.text, self.follow = title, text, follow

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Content(sanitize_line(self.title_text, 200)), id="title")
            yield Static(Content(sanitize(self.text)), id="text")

    def on_mount(self) -> None:
        if self.follow is not None:
            self.set_interval(0.5, self._read_again)

    def _read_again(self) -> None:
        if self.follow is None:
            return
        text = self.follow()
        if text != self.text:
            self.text = text
            self.query_one("#text", Static).update(Content(sanitize(text)))

