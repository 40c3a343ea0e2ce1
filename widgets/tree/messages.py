"""What the tree panel asks of the App (``TreeView.NodeChosen`` and the rest: the same classes).

Kept apart from the widget so the App can name them in its ``@on`` handlers from its first frame,
which is drawn before the tree's module loads (app/tui/startup/). Handled as
``on_tree_view_<name>`` too (the namespace), as if they were defined in ``TreeView``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class EntryMessage(Message):
    """Base of the messages about one entry (each is handled by its own class)."""

    entry_id: str
    """The entry the row under the cursor (or the pointer) stands for."""


@dataclass
class NodeChosen(EntryMessage, namespace="tree_view"):
    """Move the leaf here (Enter or a click): the controller decides what choosing an entry means."""


@dataclass
class SubagentRequested(EntryMessage, namespace="tree_view"):
    """Open the session of the sub-agent whose `task` result this row is (o; Enter chooses the
    row, which for such a row opens it too)."""


@dataclass
class PreviewRequested(EntryMessage, namespace="tree_view"):
    """Show this path in the transcript without moving the leaf (Space)."""


@dataclass
class LabelRequested(EntryMessage, namespace="tree_view"):
    """Ask for a label for this entry (l)."""


@dataclass
class ForkRequested(EntryMessage, namespace="tree_view"):
    """Fork a new session at this entry (f)."""


@dataclass
class DetailsRequested(EntryMessage, namespace="tree_view"):
    """The pointer rests on this row: answer with ``TreeView.set_details(entry_id, text)`` (model, tokens)."""


@dataclass
class BackRequested(Message, namespace="tree_view"):
    """Go back to the previous leaf position (Backspace)."""


@dataclass
class ResizeRequested(Message, namespace="tree_view"):
    """Make the panel wider or narrower: its left border dragged, or ``<`` / ``>``."""

    width: int | None
    """The width asked for, in columns (a drag); None: ``delta`` columns wider (a key)."""

    final: bool
    """The drag ended, or a key: the App keeps the width for next time."""

    delta: int = 0
    """Columns wider (negative: narrower), when ``width`` is None."""
