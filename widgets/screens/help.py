"""HelpScreen (F1): the keymap, generated from ``widgets.keymap`` — never written by hand.

Drawn as plain aligned lines, a key and what it does, one per row (two columns side by side on
a wide terminal): a Markdown table's borders left four keys to an 80x24 screen."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Markdown, Static

from ..commands import SlashCommand
from ..keymap import CONTEXTS, display_key, keys_for
from .base import Dialog

TWO_COLUMNS = 130  # terminal columns from which the keys are laid out side by side


def key_lines(width: int) -> list[Content]:
    """Every context's keys as aligned lines, titled; side by side from `TWO_COLUMNS` wide."""
    out: list[Content] = []
    for context, title in CONTEXTS.items():
        rows = [(display_key(k.key), k.description) for k in keys_for(context)]
        if not rows:
            continue
        pad = max(len(key) for key, _ in rows) + 2
        cells = [f"  {key.ljust(pad)}{what}" for key, what in rows]
        out.append(Content.styled(title, "bold $accent"))
        if width >= TWO_COLUMNS:
            half = (len(cells) + 1) // 2
            column = max(len(c) for c in cells[:half]) + 3
            for i in range(half):
                right = cells[half + i].lstrip(" ") if half + i < len(cells) else ""
                out.append(Content(cells[i].ljust(column) + right))
        else:
            out.extend(Content(c) for c in cells)
        out.append(Content(""))
    return out


class HelpScreen(Dialog[None]):
    """``HelpScreen(extra="", commands=())``: the keymap, the names of ``commands`` (the App's
    slash commands), then ``extra`` (Markdown: e.g. the prompt templates and skills found at run
    time)."""

    DEFAULT_CSS = """
    HelpScreen > #dialog { width: 100%; max-width: 160; height: 100%; max-height: 100%; }
    HelpScreen #keys { height: auto; }
    """

    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def __init__(self, extra: str = "", commands: Sequence[SlashCommand] = ()) -> None:
        super().__init__()
        self.extra = extra
        self.commands = tuple(commands)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Content.styled("Keys · Esc, F1 or q closes · ↑/↓, PgUp/PgDn scroll", "bold"), id="title")
            yield Static(Content("\n").join(key_lines(self.app.size.width)), id="keys")
            if self.commands:
                names = " ".join(f"/{c.name}" for c in self.commands)
                yield Static(Content.styled("Slash commands", "bold $accent"))
                yield Static(Content(f"  {names}\n  Typed at the start of the composer; start a message with // "
                                     "to send a literal /."))
            if self.extra:
                yield Markdown(self.extra)
