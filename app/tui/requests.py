"""What the widgets ask for (their messages), turned into controller calls.

Widgets post requests (choose this node, preview that, drop a queued message); these handlers
call the controller and leave every screen update to the events it emits.
"""

from __future__ import annotations

from textual import on

from treechat.chat_core import SendKind
from treechat.widgets.banner import Banner
from treechat.widgets.composer import Composer
from treechat.widgets.queue_tray import QueueTray
from treechat.widgets.screens import LabelDialog, SessionsScreen
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView

from .base import TuiBase
from .view import dimmed


class WidgetRequests(TuiBase):
    # ------------------------------------------------------------ the composer

    @on(Composer.Submitted)
    async def _submitted(self, message: Composer.Submitted) -> None:
        kind: SendKind = "follow_up" if message.kind == "follow_up" else "steer" if message.kind == "steer" else "send"
        outcome = await self.attempt(self.chat.send(message.text, kind))
        if outcome is None:  # not sent (no model, no key, a file that cannot be attached): the text comes back
            self.composer.give_back(message.text)

    # ------------------------------------------------------------ the tree

    @on(TreeView.NodeChosen)
    async def _node_chosen(self, message: TreeView.NodeChosen) -> None:
        await self.choose(message.entry_id)

    async def choose(self, entry_id: str) -> None:
        """The tree's click (and the transcript's edit): DESIGN §6 in the controller."""
        text = await self.attempt(self.chat.choose(entry_id))
        if self.has_class("-narrow"):  # the drawer closes: the transcript shows where we went
            self.add_class("-tree-hidden")
            self.composer.focus()
        if text is not None:  # a prompt to edit and resend as a new sibling
            self.composer.set_text(text)
            self.composer.focus()

    @on(TreeView.PreviewRequested)
    async def _preview_requested(self, message: TreeView.PreviewRequested) -> None:
        await self.attempt(self.chat.preview(message.entry_id))

    @on(TreeView.LabelRequested)
    def _label_requested(self, message: TreeView.LabelRequested) -> None:
        self.ask_label(message.entry_id)

    def ask_label(self, entry_id: str) -> None:
        row = self.chat.tree.get(entry_id)

        async def done(label: str | None) -> None:
            if label is not None:
                await self.attempt(self.chat.label(entry_id, label))

        self.push_screen(LabelDialog(self.chat.label_of(entry_id), row.preview if row else entry_id), callback=done)

    @on(TreeView.DetailsRequested)
    async def _details_requested(self, message: TreeView.DetailsRequested) -> None:
        text = await self.chat.entry_details(message.entry_id)
        if text:
            self.ui(TreeView).set_details(message.entry_id, text)

    @on(TreeView.ForkRequested)
    async def _fork_requested(self, message: TreeView.ForkRequested) -> None:
        await self.leave_session(lambda text: self.chat.fork(message.entry_id, "auto", composer_text=text))

    @on(TreeView.BackRequested)
    async def _back_requested(self, message: TreeView.BackRequested) -> None:
        await self.attempt(self.chat.back())

    # ------------------------------------------------------------ the transcript

    @on(Transcript.SiblingRequested)
    async def _sibling_requested(self, message: Transcript.SiblingRequested) -> None:
        await self.attempt(self.chat.switch_sibling(message.entry_id, message.delta))

    @on(Transcript.EditRequested)
    async def _edit_requested(self, message: Transcript.EditRequested) -> None:
        await self.choose(message.entry_id)  # exactly what a click on the prompt in the tree does

    @on(Transcript.RetryRequested)
    async def _retry_requested(self, message: Transcript.RetryRequested) -> None:
        await self.attempt(self.chat.retry(message.entry_id))

    @on(Transcript.ForkRequested)
    async def _transcript_fork_requested(self, message: Transcript.ForkRequested) -> None:
        await self.leave_session(lambda text: self.chat.fork(message.entry_id, "auto", composer_text=text))

    @on(Transcript.LabelRequested)
    def _transcript_label_requested(self, message: Transcript.LabelRequested) -> None:
        self.ask_label(message.entry_id)

    @on(Transcript.CopyRequested)
    async def _copy_requested(self, message: Transcript.CopyRequested) -> None:
        await self.copy(message.text, message.what)

    @on(Transcript.ExpandCompaction)
    async def _expand_compaction(self, message: Transcript.ExpandCompaction) -> None:
        entries = await self.chat.compacted_away(message.entry_id)
        await self.ui(Transcript).show_originals(message.entry_id, dimmed(entries))

    # ------------------------------------------------------------ the queue, the banner, sessions

    @on(QueueTray.Dropped)
    async def _queue_dropped(self, message: QueueTray.Dropped) -> None:
        await self.chat.drop_queued(message.index)

    @on(QueueTray.PullLast)
    async def _queue_pull_last(self, message: QueueTray.PullLast) -> None:
        await self.pull_queued()

    @on(Banner.Dismissed)
    def _banner_dismissed(self, message: Banner.Dismissed) -> None:
        self.composer.focus()

    @on(SessionsScreen.Rename)
    async def _session_renamed(self, message: SessionsScreen.Rename) -> None:
        await self.attempt(self.chat.rename(message.name, message.session_id))

    @on(SessionsScreen.Delete)
    async def _session_deleted(self, message: SessionsScreen.Delete) -> None:
        await self.attempt(self.chat.delete_session(message.session_id))
