"""ModelPicker (Ctrl+L): filter and choose a model; dismisses with its ref ("provider/id") or None.

``ModelPicker(models, current=None)``: ``models`` is a list of refs, or of ``(ref, problem)``
pairs where ``problem`` (e.g. "no key: set OPENAI_API_KEY") greys the model out — it is listed,
with the reason, but cannot be chosen.
"""

from __future__ import annotations

from textual import events
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..sanitize import sanitize_line
from .base import Dialog


class ModelPicker(Dialog):
    def __init__(self, models: list, current: str | None = None) -> None:
        super().__init__()
        self.models = [(m, None) if isinstance(m, str) else (m[0], m[1]) for m in models]
        self.current = current

    def compose(self):
        with Vertical(id="dialog"):
            yield Static("Model", id="title")
            yield Input(placeholder="type to filter", id="filter")
            yield OptionList(id="models")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#filter", Input).focus()

    def _fill(self, text: str) -> None:
        words = text.lower().split()
        options = self.query_one("#models", OptionList)
        options.clear_options()
        for ref, problem in self.models:
            if all(w in ref.lower() for w in words):
                mark = "● " if ref == self.current else "  "
                label = Content(mark + sanitize_line(ref, 80) + (f"  ({sanitize_line(problem, 80)})" if problem else ""))
                options.add_option(Option(label, id=ref, disabled=bool(problem)))
        for index in range(options.option_count):
            if not options.get_option_at_index(index).disabled:
                options.highlighted = index
                break

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#models", OptionList)
        if options.highlighted is not None:
            option = options.get_option_at_index(options.highlighted)
            if not option.disabled:
                self.dismiss(option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def on_key(self, event: events.Key) -> None:
        self.steer_list_from_input(event, self.query_one("#models", OptionList))
