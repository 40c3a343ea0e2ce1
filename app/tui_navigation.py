"""Moving around the tree from the App: choosing, previewing, labelling, forking, siblings.

Mixed into TreechatApp; DESIGN §6 decides what choosing an entry does.
"""

from __future__ import annotations

from treechat.storage.model import message_text
from treechat.widgets.banner import Banner
from treechat.widgets.composer import Composer
from treechat.widgets.screens import LabelDialog
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView

from .tui_view import originals_of


class NavigationMixin:
    # ------------------------------------------------------------ tree and transcript requests

    async def on_tree_view_node_chosen(self, message: TreeView.NodeChosen) -> None:
        await self.choose_entry(message.entry_id)

    async def on_tree_view_preview_requested(self, message: TreeView.PreviewRequested) -> None:
        await self.preview(message.entry_id)

    async def on_tree_view_label_requested(self, message: TreeView.LabelRequested) -> None:
        await self.ask_label(message.entry_id)

    async def on_tree_view_fork_requested(self, message: TreeView.ForkRequested) -> None:
        await self.fork_at(message.entry_id, position="auto")

    async def on_tree_view_back_requested(self, message: TreeView.BackRequested) -> None:
        await self.action_back()

    async def on_transcript_sibling_requested(self, message: Transcript.SiblingRequested) -> None:
        sibs = self.index.siblings(message.entry_id)
        if len(sibs) < 2:
            return
        target = sibs[(sibs.index(message.entry_id) + message.delta) % len(sibs)]
        await self.move_leaf(self.index.newest_leaf_under(target))

    async def on_transcript_expand_compaction(self, message: Transcript.ExpandCompaction) -> None:
        assert self.session is not None
        entry = await self.session.get_entry(message.entry_id)
        if entry is None or entry.type != "compaction":
            return
        full = await self.session.get_branch(entry.id)
        await self.ui(Transcript).show_originals(entry.id, originals_of(full, entry))

    async def on_banner_dismissed(self, message: Banner.Dismissed) -> None:
        self.ui(Composer).focus()

    # ------------------------------------------------------------ moving the leaf

    async def choose_entry(self, entry_id: str) -> None:
        """DESIGN §6: a user message puts its text in the composer and moves the leaf to its
        parent (the next send is a new sibling); anything else moves the leaf to it."""
        assert self.session is not None
        if self.asession is not None and self.asession.is_streaming:
            self.notify("The agent is still running: showing that branch only. Esc stops the run.", timeout=4)
            await self.preview(entry_id)
            return
        entry = await self.session.get_entry(entry_id)
        if entry is None:
            self.show_error(f"Entry {entry_id} not found")
            return
        if entry.type == "message" and getattr(entry.message, "role", None) == "user":
            await self.move_leaf(entry.parent_id)
            self.ui(Composer).set_text(message_text(entry.message))
            self.ui(Composer).focus()
        else:
            await self.move_leaf(entry_id)

    async def move_leaf(self, target: str | None, *, remember: bool = True) -> None:
        assert self.session is not None
        old = self.session.leaf_id
        self.preview_id = None
        if target != old:
            if remember:
                self.leaf_history.append(old)
            if self.asession is not None:
                await self.asession.move_to(target)  # emits session_reloaded, which redraws
            else:
                await self.session.move_to(target)
            if old is not None and old not in set(self.index.path_ids(target)):
                self.abandoned_leaf = old
                row = self.index.by_id.get(old)
                where = f"“{row.preview[:40]}”" if row else old
                self.notify(f"Left the branch at {where}. /summarize adds a summary of it to the context; "
                            "Backspace in the tree goes back.", timeout=6)
        if self.asession is None or target == old:
            await self.reload_view()

    async def preview(self, entry_id: str) -> None:
        self.preview_id = entry_id if entry_id != (self.session.leaf_id if self.session else None) else None
        await self.reload_view()

    async def ask_label(self, entry_id: str) -> None:
        assert self.session is not None
        current = self.labels.get(entry_id)
        row = self.index.by_id.get(entry_id)

        async def done(label: str | None) -> None:
            if label is None:
                return
            await self.session.append_label(entry_id, label or None)
            await self.reload_view()

        self.push_screen(LabelDialog(current, row.preview if row else entry_id), callback=done)

    async def fork_at(self, entry_id: str, *, position: str) -> None:
        """A new session holding the path to `entry_id`; "auto" forks before a user message (its
        text goes to the composer) and at anything else. The original session is not changed."""
        from treechat.storage.base import StorageError

        from .session.branching import ForkError, fork_session

        assert self.session is not None
        if position == "auto":
            row = self.index.by_id.get(entry_id)
            position = "before" if row is not None and row.role == "user" else "at"
        try:
            storage, text = await fork_session(self.catalog, self.session, entry_id, position)
        except (ForkError, StorageError) as err:
            self.show_error(str(err))
            return
        await self.open_session(storage, editor_text=text)
        self.notify(f"Forked into a new session {storage.session_id[:8]}; Ctrl+R goes back to the original.")
