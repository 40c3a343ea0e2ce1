"""HelpScreen (F1): the keymap, generated from ``widgets.keymap`` — never written by hand."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from ..keymap import help_markdown
from .base import Dialog


class HelpScreen(Dialog):
    """``HelpScreen(extra="")``: the keymap, then ``extra`` (Markdown: e.g. the prompt templates
    and skills found at run time)."""

    DEFAULT_CSS = """
    HelpScreen > #dialog { height: 85%; }
    """

    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def __init__(self, extra: str = "") -> None:
        super().__init__()
        self.extra = extra

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Markdown(help_markdown() + ("\n" + self.extra if self.extra else ""))
