"""What the tree asks for, and `/tree`, `/back`: choosing an entry (Enter or a click; the
transcript's edit does the same), previewing one (Space), its details for the tooltip, going back
to the previous leaf (Backspace). A sub-agent's result (a `task` call's) opens its session (Enter
or o, in the tree or the transcript); back at that session's start returns to the caller's. The controller decides what each means; the view follows its
events. A draft that a move replaced is kept, and comes back with the leaf (`draft_returns`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:
    from ..shell import Shell
    from .panel import TreePanel


class TreeMoves:
    def __init__(self, shell: Shell, panel: TreePanel) -> None:
        self.shell, self.panel = shell, panel
        self.parked_drafts: dict[str, str] = {}  # leaf id → a draft a move replaced there

    @command("tree", title="Show or focus the tree", help="the session tree panel", key="F2")
    async def cmd_tree(self, args: str) -> None:
        self.panel.show()
        self.shell.tree_view.focus()

    @command("back", title="Back to the previous leaf",
             help="undo the last leaf move (at a sub-agent's start: back to the session that started it)")
    async def cmd_back(self, args: str) -> None:
        await self.back()

    async def choose(self, entry_id: str) -> None:
        """The tree's click (and the transcript's edit): the controller decides what choosing an
        entry means. A draft that the prompt to edit replaces is kept: in ↑, and back in the
        composer when the leaf returns where it was typed (`draft_returns`)."""
        shell = self.shell
        if await shell.chat.child_session(entry_id) is not None:  # a sub-agent's result: its session
            await self.open_child(entry_id)
            return
        composer = shell.composer
        left, draft = shell.chat.leaf_id, composer.typed_draft
        text = await shell.attempt(shell.chat.choose(entry_id))
        if text is not None and draft.strip() and left is not None:
            self.parked_drafts[left] = draft
        if self.panel.close_drawer():  # the drawer closes: the transcript shows where we went
            composer.focus()
        if text is not None:  # a prompt to edit and resend as a new sibling
            composer.set_text(text)
            composer.focus()
        shell.questions.handed_over()  # a restore offer may follow: the person's next act answers it

    async def preview(self, entry_id: str) -> None:
        await self.shell.attempt(self.shell.chat.preview(entry_id))

    async def details(self, entry_id: str) -> None:
        """The pointer rests on a row: its model and tokens, for the tooltip (a sub-agent's result:
        the task's description)."""
        chat = self.shell.chat
        text = await chat.entry_details(entry_id)
        link = await chat.child_session(entry_id)
        if link is not None:
            text = "\n".join(t for t in (f"task: {link.description}", text) if t)
        if text:
            self.shell.tree_view.set_details(entry_id, text)

    async def back(self) -> None:
        """Backspace in the tree, `/back`: the leaf's previous place; at the start of a sub-agent's
        session, the session that started it (what is typed stays with the session left)."""
        self.shell.questions.handed_over()
        chat = self.shell.chat
        if not chat.leaf_history and await chat.parent_session() is not None:
            await self._leave(lambda text: chat.back(composer_text=text))
        else:
            await self.shell.attempt(chat.back())

    async def open_child(self, entry_id: str) -> None:
        """A sub-agent's result: open its session (`back` at its start comes back here)."""
        chat = self.shell.chat
        await self._leave(lambda text: chat.open_child(entry_id, composer_text=text))

    async def _leave(self, switch: Callable[[str], Awaitable[object]]) -> None:
        """Another session opens: what is typed goes with the one left, as its draft; on an error
        nothing moved and the text comes back."""
        composer = self.shell.composer
        text = composer.text
        composer.load_text("")

        async def went() -> bool:
            await switch(text)
            return True

        if not await self.shell.attempt(went()):
            if not composer.text:
                composer.load_text(text)
        else:
            from treechat.widgets.chrome.banner import Banner

            banner = self.shell.ui(Banner, "#banner")
            if banner.severity == "error":
                banner.hide()  # (why an earlier try did not go is no news now)
        if self.panel.close_drawer():  # the transcript shows where we went (or the banner why not)
            composer.focus()

    def draft_returns(self, leaf_id: str | None) -> None:
        """Back at a leaf where a move replaced a draft: the draft comes back (unless something
        else was typed since)."""
        draft = self.parked_drafts.pop(leaf_id, None) if leaf_id is not None else None
        composer = self.shell.composer
        if draft is not None and not composer.typed_draft.strip():
            composer.bring_back(draft)
