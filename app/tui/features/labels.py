"""Labels: a name on an entry, shown in the tree and on the message (`l` in the tree or the
transcript asks for one; `/label TEXT` labels the leaf; empty clears). The controller keeps them
(`Chat.label`, a label entry); the view follows its `LabelChanged` event (`chat_view.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import TuiBase
from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/starting.py)
    from treechat.widgets.transcript.view import Transcript
    from treechat.widgets.tree.view import TreeView


class Labels(TuiBase):
    @command("label", title="Label the current entry", args="[TEXT]", help="a label on the leaf (empty clears)")
    async def cmd_label(self, args: str) -> None:
        await self.attempt(self.chat.label(None, args))

    def on_tree_view_label_requested(self, message: TreeView.LabelRequested) -> None:
        self.ask_label(message.entry_id)

    def on_transcript_label_requested(self, message: Transcript.LabelRequested) -> None:
        self.ask_label(message.entry_id)

    def ask_label(self, entry_id: str) -> None:
        """The label dialog for `entry_id`, filled with its label; OK sets it, empty clears it."""
        row = self.chat.tree.get(entry_id)

        async def done(label: str | None) -> None:
            if label is not None:
                await self.attempt(self.chat.label(entry_id, label))

        from treechat.widgets.screens import LabelDialog

        self.push_screen(LabelDialog(self.chat.label_of(entry_id), row.preview if row else entry_id), callback=done)
