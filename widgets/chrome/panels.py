"""The places of the transcript and the tree in the first frame, before the session opens.

The first frame is drawn before the store, the session's model and the heavy widgets are loaded
(issue 27): `Transcript` and `TreeView` (markdown, the tree's layout, the storage vocabulary)
take their place once the session opens. Until then these empty widgets hold their room, laid out
and styled like them (styles.tcss gives each pair the same rules), so nothing moves when they are
swapped. They import nothing but Textual's base widget.
"""

from __future__ import annotations

from textual.visual import VisualType
from textual.widget import Widget


class Space(Widget):
    def render(self) -> VisualType:
        return ""  # (a bare Widget draws its class name)


class TranscriptSpace(Space):
    DEFAULT_CSS = """
    TranscriptSpace { height: 1fr; }
    """


class TreeSpace(Space):
    """The tree panel's frame (its border and title), empty."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = "tree"  # as TreeView titles itself
