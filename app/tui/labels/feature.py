"""Labels: a name on an entry, shown in the tree and on the message (`l` in the tree or the
transcript asks for one; `/label TEXT` labels the leaf; empty clears). The controller keeps them
(`Chat.label`, a label entry); the view follows its `LabelChanged` event (view/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:
    from ..shell import Shell


class Labels:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    @command("label", title="Label the current entry", args="[TEXT]", help="a label on the leaf (empty clears)")
    async def cmd_label(self, args: str) -> None:
        await self.shell.attempt(self.shell.chat.label(None, args))

    def ask_label(self, entry_id: str) -> None:
        """The label dialog for `entry_id`, filled with its label; OK sets it, empty clears it."""
        self.shell.run_worker(self._ask_label(entry_id), group="dialog")

    async def _ask_label(self, entry_id: str) -> None:
        from treechat.widgets.screens import LabelDialog

        chat = self.shell.chat
        row = chat.tree.get(entry_id)
        label = await self.shell.ask(LabelDialog(chat.label_of(entry_id), row.preview if row else entry_id))
        if label is not None:
            await self.shell.attempt(chat.label(entry_id, label))
