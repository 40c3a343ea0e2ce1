"""HelpScreen (F1): the keymap, generated from ``widgets.keymap`` — never written by hand."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from ..commands import SlashCommand
from ..keymap import help_markdown
from .base import Dialog


class HelpScreen(Dialog):
    """``HelpScreen(extra="", commands=())``: the keymap, the names of ``commands`` (the App's
    slash commands), then ``extra`` (Markdown: e.g. the prompt templates and skills found at run
    time)."""

    DEFAULT_CSS = """
    HelpScreen > #dialog { height: 85%; }
    """

    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def __init__(self, extra: str = "", commands: Sequence[SlashCommand] = ()) -> None:
        super().__init__()
        self.extra = extra
        self.commands = tuple(commands)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Markdown(help_markdown(self.commands) + ("\n" + self.extra if self.extra else ""))
