"""SessionHeader: the line above the transcript — session name and where on the tree we are.

Data in: ``set_session(name, position="", viewing=None)``; ``position`` is free text from the
App such as "branch 2/3 at “try approach B”"; ``viewing`` names a previewed branch (the leaf
is elsewhere). Posts nothing.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from treechat.text.sanitize import sanitize_line


class SessionHeader(Widget):
    DEFAULT_CSS = """
    SessionHeader { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session_name = ""
        self.position = ""
        self.viewing: str | None = None
        self.known = False  # set_session was called (the first frame comes before the session is open)

    def set_session(self, name: str | None, position: str = "", viewing: str | None = None) -> None:
        self.known = True
        self.session_name, self.position, self.viewing = name or "", position, viewing
        self.refresh()

    def render(self) -> Content:
        if not self.known:
            return Content("")
        # The viewing hint says how to get back: it is shown whole, and the name and the position
        # give up their room first (at 160 columns a long name pushed the way back off).
        width = self.content_size.width or 160
        hint = f" viewing {sanitize_line(self.viewing, 50)} · Esc returns " if self.viewing else ""
        room = max(width - len(hint) - (3 if hint else 0), 12)
        name = sanitize_line(self.session_name, min(60, room)) or "new session"
        parts: list[str | tuple[str, str]] = [(name, "bold")]
        left = room - len(name) - 4
        if self.position and left >= 8:
            parts += [("  ▸ ", "dim"), sanitize_line(self.position, min(80, left))]
        if hint:
            parts += ["   ", (hint, "reverse $warning")]
        return Content.assemble(*parts)
