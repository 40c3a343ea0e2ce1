"""SessionHeader: the line above the transcript — session name and where on the tree we are.

Data in: ``set_session(name, position="", viewing=None)``; ``position`` is free text from the
App such as "branch 2/3 at “try approach B”"; ``viewing`` names a previewed branch (the leaf
is elsewhere). Posts nothing.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from .sanitize import sanitize_line


class SessionHeader(Widget):
    DEFAULT_CSS = """
    SessionHeader { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session_name = ""
        self.position = ""
        self.viewing: str | None = None

    def set_session(self, name: str | None, position: str = "", viewing: str | None = None) -> None:
        self.session_name, self.position, self.viewing = name or "", position, viewing
        self.refresh()

    def render(self) -> Content:
        parts: list = [(sanitize_line(self.session_name, 60) or "new session", "bold")]
        if self.position:
            parts += [("  ▸ ", "dim"), sanitize_line(self.position, 80)]
        if self.viewing:
            parts += ["   ", (f" viewing {sanitize_line(self.viewing, 40)} · g: back to leaf ", "reverse $warning")]
        return Content.assemble(*parts)
