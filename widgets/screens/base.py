"""What every modal of ours shares: a centred bordered box, Escape closes with ``None``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from textual import events
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList

R = TypeVar("R")


class Dialog(ModalScreen[R | None], Generic[R]):
    """A dialog dismissed with an `R`, or with None (Escape)."""

    DEFAULT_CSS = """
    Dialog { align: center middle; background: $background 60%; }
    Dialog > #dialog {
        width: 80%; max-width: 110; height: auto; max-height: 85%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    Dialog #title { text-style: bold; color: $accent; margin-bottom: 1; }
    Dialog .hint { color: $text-muted; margin-top: 1; }
    Dialog OptionList { height: auto; max-height: 24; border: none; }
    """

    BINDINGS = [Binding("escape", "close", "Close")]

    def action_close(self) -> None:
        self.dismiss(None)

    def steer_list_from_input(self, event: events.Key, options: OptionList) -> None:
        """Up/Down/PgUp/PgDn typed in a filter box move the list below it (call from on_key)."""
        if not isinstance(self.focused, Input):
            return
        actions: dict[str, Callable[[], None]] = {
            "up": options.action_cursor_up, "down": options.action_cursor_down,
            "pageup": options.action_page_up, "pagedown": options.action_page_down}
        action = actions.get(event.key)
        if action is not None:
            event.stop()
            event.prevent_default()
            action()
