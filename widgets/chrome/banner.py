"""Banner: a one-line notice (e.g. "No API key: …") or an inline error, with a ✕ to dismiss.

Data in: ``Banner(text, severity="warning", dismissible=True)``; ``show(text, severity)`` to
reuse one; ``hide()``. Severity is "info" | "warning" | "error". Posts ``Dismissed()`` when the
user clicks ✕ (the banner hides itself too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widget import Widget

from treechat.text.sanitize import sanitize

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")


class Banner(Widget):
    DEFAULT_CSS = """
    Banner { height: auto; padding: 0 1; background: $warning 20%; color: $text; }
    Banner.-info { background: $primary 20%; }
    Banner.-error { background: $error 25%; }
    Banner.-hidden { display: none; }
    """

    @dataclass
    class Dismissed(Message):
        """The person closed the banner (its ✕)."""

    def __init__(self, text: str = "", severity: Severity = "warning", *, dismissible: bool = True,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.text, self.dismissible = "", dismissible
        self.severity: Severity = "warning"
        self.show(text, severity) if text else self.add_class("-hidden")

    def show(self, text: str, severity: Severity = "warning") -> None:
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
        self.remove_class(*(f"-{s}" for s in SEVERITIES), "-hidden")
        self.text, self.severity = sanitize(text), severity
        self.add_class(f"-{severity}")
        self.refresh(layout=True)

    def hide(self) -> None:
        self.add_class("-hidden")

    def render(self) -> Content:
        icon = {"info": "ℹ", "warning": "⚠", "error": "✖"}[self.severity]
        close = "  ✕" if self.dismissible else ""
        return Content.assemble((f"{icon} ", "bold"), self.text, (close, "bold"))

    def on_click(self, event: events.Click) -> None:
        if self.dismissible and event.x >= self.content_region.width - 3:
            self.hide()
            self.post_message(self.Dismissed())
