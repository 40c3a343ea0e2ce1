"""ThinkingPicker (Alt+T): choose the thinking level; dismisses with it, or None."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .base import Dialog

LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


class ThinkingPicker(Dialog):
    def __init__(self, current: str = "off", levels: tuple[str, ...] = LEVELS) -> None:
        super().__init__()
        self.current, self.levels = current, levels

    def compose(self):
        with Vertical(id="dialog"):
            yield Static("Thinking level", id="title")
            yield OptionList(*(Option(("● " if lv == self.current else "  ") + lv, id=lv) for lv in self.levels))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.levels:
            options.highlighted = self.levels.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)
