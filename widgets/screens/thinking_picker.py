"""ThinkingPicker (Alt+T): choose the thinking level; dismisses with it, or None.

``ThinkingPicker(current="off", levels=LEVELS, note=None)``: ``levels`` are the ones the model
can use (the App derives them from the model: "off" alone for a model that does not think, no
"xhigh" where it is not supported); ``note`` says why some are missing.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from treechat.text.sanitize import sanitize_line

from .base import Dialog

LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


class ThinkingPicker(Dialog[str]):
    def __init__(self, current: str = "off", levels: tuple[str, ...] = LEVELS, note: str | None = None) -> None:
        super().__init__()
        self.current, self.levels, self.note = current, tuple(levels) or ("off",), note

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Thinking level", id="title")
            yield OptionList(*(Option(("● " if lv == self.current else "  ") + lv, id=lv) for lv in self.levels))
            if self.note:
                yield Static(Content(sanitize_line(self.note, 200)), classes="hint", id="note")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.levels:
            options.highlighted = self.levels.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)
