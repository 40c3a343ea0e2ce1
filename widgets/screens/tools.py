"""ToolsDialog (`/tools`): every tool the model can be given, each on or off.

``ToolsDialog(rows)``: ``rows`` are ``(name, words, on, builtin)`` — the tool's name, what a person
reads about it, whether the next request carries it, and whether it is built in (else an MCP
server's). Space, Enter or a click turns the highlighted tool on or off (each row says `on` or
`off` in words, not by a colour alone); closing the dialog (Esc) keeps what it shows: it dismisses
with the names on, or ``None`` when nothing was changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from treechat.text.sanitize import sanitize_line

from .base import Dialog

ToolRow = tuple[str, str, bool, bool]  # (name, words, on, builtin)


class ToolList(OptionList):
    """The tools; Space turns the highlighted one on or off, as Enter and a click do."""

    BINDINGS = [Binding("space", "select", "On/off", show=False)]


class ToolsDialog(Dialog[list[str]]):
    DEFAULT_CSS = """
    ToolsDialog ToolList, ToolsDialog ToolList:focus { border: none; padding: 0; }
    """

    def __init__(self, rows: Sequence[ToolRow]) -> None:
        super().__init__()
        self.rows = list(rows)
        self.state = {name: on for name, _, on, _ in self.rows}
        self.before = dict(self.state)
        self.width = min(max((len(name) for name, *_ in self.rows), default=4) + 2, 32)

    def _prompt(self, name: str, words: str, builtin: bool) -> Content:
        on = self.state[name]
        about = sanitize_line(words, 100) if builtin else f"MCP · {sanitize_line(words, 90)}"
        return Content.assemble(("● on   " if on else "○ off  ", "bold $success" if on else "$text-muted"),
                                (sanitize_line(name, 30).ljust(self.width), "bold" if on else ""), (about, "dim"))

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Tools the model may use", id="title")
            yield ToolList(*(Option(self._prompt(name, words, builtin), id=name) for name, words, _, builtin in self.rows))
            yield Static(Content("bash, edit and write ask you first; read, ls and grep ask outside the working "
                                 "folder.\nSpace / Enter / click: on or off · Esc: done (kept with this session)"),
                         classes="hint")

    def on_mount(self) -> None:
        options = self.query_one(ToolList)
        if self.rows:
            options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        name = event.option.id
        row = next((r for r in self.rows if r[0] == name), None)
        if name is None or row is None:
            return
        self.state[name] = not self.state[name]
        event.option_list.replace_option_prompt(name, self._prompt(name, row[1], row[3]))

    @property
    def chosen(self) -> list[str]:
        return [name for name, on in self.state.items() if on]

    def action_close(self) -> None:
        self.dismiss(self.chosen if self.state != self.before else None)
