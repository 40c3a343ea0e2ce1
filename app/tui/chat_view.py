"""The one refresh path: each controller event reconciles the widgets it affects, once.

Handlers read only their event (and the controller's tree index, which the event's data belongs
to); none reads storage or redraws what did not change.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from textual import on

from treechat.storage import gc_policy
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome

from . import messages as m
from .base import TuiBase, drawn

if TYPE_CHECKING:
    from treechat.chat_events import Header, Readiness, Status
    from treechat.shown_path import ShownPath

# The storage vocabulary, the transcript's items and the dialogs are imported where they are used:
# no controller event comes before the session opens, after the first frame (app/tui/starting.py).


class ChatView(TuiBase):
    # ------------------------------------------------------------ a session, a path

    @on(m.SessionOpened)
    @drawn
    async def _session_opened(self, message: m.SessionOpened) -> None:
        e = message.event
        self.show_unsent([])  # (what was sent before the session opened stays until it goes out)
        composer = self.composer
        composer.running = False
        self.tree_view.set_index(e.tree, e.leaf_id, loading=e.tree_loading)
        await self._show_path(e.path)
        self._header(e.header)
        self.ui(StatusBar).update_status(**asdict(e.status))
        self._welcome_model(status=e.status)
        composer.set_history(e.history)
        if e.composer_text:  # the session's draft (and text to edit): before anything typed since
            typed = composer.text.strip()
            composer.set_text(f"{e.composer_text}\n\n{typed}" if typed else e.composer_text)
        self.call_after_refresh(gc_policy.settle)
        self.call_after_refresh(self.chat.load_tree)  # a big session's whole tree: after this frame

    @on(m.TreeLoaded)
    @drawn
    def _tree_loaded(self, message: m.TreeLoaded) -> None:
        """A big session's whole tree replaces its path's: the panel (the cursor stays on its
        entry) and the `‹ n/m ›` marks of what the transcript holds."""
        from .view import sibling_marks

        tree = message.event.tree
        self.tree_view.set_index(tree, self.chat.leaf_id, keep_cursor=True)
        transcript = self.transcript
        for entry_id, index, count in sibling_marks([i.entry_id for i in transcript.items.loaded()], tree):
            transcript.set_siblings(entry_id, index, count)

    @on(m.PathChanged)
    @drawn
    async def _path_changed(self, message: m.PathChanged) -> None:
        e = message.event
        await self._show_path(e.path)
        tree = self.tree_view
        tree.set_leaf(e.leaf_id)
        if e.cause == "move":
            tree.move_cursor_to(e.leaf_id)

    async def _show_path(self, path: ShownPath) -> None:
        from .view import item_ids, items_loader, sibling_marks, transcript_items

        tree = self.chat.tree
        items = transcript_items(path, tree)  # the newest entries' items; the window loads the others
        transcript = self.transcript

        def marked(marks: list[tuple[str, int, int]]) -> None:
            for entry_id, index, count in marks:
                transcript.set_siblings(entry_id, index, count)

        ids = item_ids(path, tree)
        await transcript.set_path(ids, items, items_loader(self.chat.entries, lambda: self.chat.tree, marked))
        marked(sibling_marks([i.entry_id for i in items], tree))
        self._show_welcome(not ids)

    # ------------------------------------------------------------ entries as they are written

    @on(m.EntryAppended)
    @drawn
    async def _entry_appended(self, message: m.EntryAppended) -> None:
        from treechat.storage.model import AssistantMessage, MessageEntry, UserMessage

        from .view import item_for, sibling_marks

        e = message.event
        tree = self.tree_view
        tree.add_row(e.row)
        tree.set_leaf(e.leaf_id)
        if not e.shown:
            return
        transcript = self.transcript
        if isinstance(e.entry, MessageEntry) and isinstance(e.entry.message, AssistantMessage):
            await transcript.set_streaming(None)
        elif isinstance(e.entry, MessageEntry) and isinstance(e.entry.message, UserMessage):
            await transcript.follow_end()  # what the user sent, and its answer, in view however far up they were
        item = item_for(e.entry, self.chat.tree)
        if item is None:
            return
        await transcript.append_message(item)
        self._show_welcome(False)
        for entry_id, index, count in sibling_marks([e.entry.id], self.chat.tree):
            transcript.set_siblings(entry_id, index, count)

    @on(m.LabelChanged)
    @drawn
    def _label_changed(self, message: m.LabelChanged) -> None:
        e = message.event
        if e.row is not None:
            self.tree_view.replace_row(e.row)
        self.transcript.set_label(e.target_id, e.label)

    @on(m.Focused)
    @drawn
    async def _focused(self, message: m.Focused) -> None:
        entry_id = message.event.entry_id
        await self.transcript.highlight(entry_id)
        self.remove_class("-tree-hidden")
        self.tree_view.move_cursor_to(entry_id)

    @on(m.HeaderChanged)
    @drawn
    def _header_changed(self, message: m.HeaderChanged) -> None:
        self._header(message.event.header)

    def _header(self, header: Header) -> None:
        self.ui(SessionHeader).set_session(header.title, header.position, header.viewing)

    @on(m.StatusChanged)
    @drawn
    def _status_changed(self, message: m.StatusChanged) -> None:
        self.ui(StatusBar).update_status(**asdict(message.event.status))
        self._welcome_model(status=message.event.status)

    # ------------------------------------------------------------ runs

    @on(m.RunStarted)
    @drawn
    def _run_started(self, message: m.RunStarted) -> None:
        self.composer.running = True
        gc_policy.streaming(True)  # no full collection while tokens arrive (storage.gc_policy)

    @on(m.RunEnded)
    @drawn
    async def _run_ended(self, message: m.RunEnded) -> None:
        self.composer.running = False
        self.ui(StatusBar).wait(0)
        await self.transcript.set_streaming(None)
        gc_policy.streaming(False)

    @on(m.ReplyStreaming)
    @drawn
    async def _reply_streaming(self, message: m.ReplyStreaming) -> None:
        if self.chat.preview_id is not None:
            return  # another branch is on screen; the reply shows when the preview ends
        e, transcript = message.event, self.transcript
        status = self.ui(StatusBar)
        if status.waiting:
            status.wait(0)  # the reply is coming: a wait shown is over
        if e.started:
            await transcript.set_streaming(e.message)
        else:
            transcript.update_streaming(e.message)

    @on(m.QueueChanged)
    @drawn
    def _queue_changed(self, message: m.QueueChanged) -> None:
        e = message.event
        self.show_unsent([("steer", t) for t in e.steering] + [("follow_up", t) for t in e.follow_up])

    @on(m.CompactionStarted)
    @drawn
    def _compaction_started(self, message: m.CompactionStarted) -> None:
        self.notify(f"Compacting the conversation ({message.event.reason})…", timeout=3)

    @on(m.CompactionEnded)
    @drawn
    def _compaction_ended(self, message: m.CompactionEnded) -> None:
        e = message.event
        if e.error:
            self.show_error(e.error)
        else:
            banner = self.ui(Banner, "#banner")
            if banner.severity == "error":
                banner.hide()  # e.g. an earlier "Nothing to compact": this one went through
            self.notify(f"Compacted ({e.reason}): {e.tokens_before or 0:,} → {e.tokens_after or 0:,} tokens. "
                        "Every original entry is still in the tree.", timeout=6)

    @on(m.Waiting)
    @drawn
    def _waiting(self, message: m.Waiting) -> None:
        e = message.event
        label = "retrying in" if e.kind == "retry" else "gives up in"
        self.ui(StatusBar).wait(e.seconds, e.reason, label=label)  # a countdown in the status bar

    # ------------------------------------------------------------ what the user should know

    @on(m.Readiness)
    @drawn
    def _readiness(self, message: m.Readiness) -> None:
        self._welcome_model(readiness=message.event)
        self._readiness_banner(message.event)

    def _readiness_banner(self, e: Readiness) -> None:
        banner = self.ui(Banner, "#banner")
        if e.problem and self.ui(Welcome).display:
            if banner.severity == "warning":
                banner.hide()  # the welcome says it, with the rest of what to do first
        elif e.problem:
            extra = f" Detected local servers: {', '.join(e.servers)} (Ctrl+L)." if e.servers else ""
            banner.show(f"{e.problem}{extra} Browsing, the tree, search and sessions work without one.", "warning")
        elif banner.severity == "warning":
            banner.hide()

    @on(m.Notice)
    @drawn
    def _notice(self, message: m.Notice) -> None:
        self.notify(message.event.text, severity=message.event.severity, timeout=6)

    @on(m.Failed)
    @drawn
    def _failed(self, message: m.Failed) -> None:
        self.show_error(message.event.text)

    @on(m.Unsaved)
    @drawn
    async def _unsaved(self, message: m.Unsaved) -> None:
        """A reply that could not be saved stays on screen (the banner says where it was kept)."""
        from treechat.widgets.transcript.message_view import TranscriptItem

        e = message.event
        if getattr(e.message, "role", None) == "assistant":
            transcript = self.transcript
            await transcript.set_streaming(None)
            await transcript.append_message(TranscriptItem(f"unsaved-{id(e.message)}", e.message))

    @on(m.Succeeded)
    @drawn
    def _succeeded(self, message: m.Succeeded) -> None:
        banner = self.ui(Banner, "#banner")
        if banner.severity == "error":
            banner.hide()  # an error is not news once a later run went through

    @on(m.SessionsChanged)
    @drawn
    async def _sessions_changed(self, message: m.SessionsChanged) -> None:
        """Another writer changed the store: an open sessions list is read again."""
        screens = sys.modules.get("treechat.widgets.screens.sessions")
        if screens is None:
            return  # never opened: the dialogs load on first use (app/tui/starting.py)
        listed = [s for s in self.screen_stack if isinstance(s, screens.SessionsScreen)]
        if listed:
            rows = await self.chat.list_sessions()
            for screen in listed:
                screen.set_sessions(rows)

    # ------------------------------------------------------------ the welcome (an empty transcript)

    _welcome_readiness: Readiness | None = None

    def _show_welcome(self, empty: bool) -> None:
        """An empty transcript shows the welcome in its place; the first item replaces it. (On a
        narrow terminal the tree is a closed drawer anyway: the welcome has the width.)"""
        welcome = self.ui(Welcome)
        if welcome.display == empty:
            return
        welcome.display = empty
        self.transcript.display = not empty
        from treechat.chat_events import Readiness

        # the banner says what the welcome no longer does
        self._readiness_banner(self._welcome_readiness or Readiness(None))

    def _welcome_model(self, *, status: Status | None = None, readiness: Readiness | None = None) -> None:
        welcome = self.ui(Welcome)
        if readiness is not None:
            self._welcome_readiness = readiness
        model = status.model if status is not None else welcome.model
        known = self._welcome_readiness
        welcome.set_model(None if model == "no model" else model, known.problem if known else None,
                          known.servers if known else ())
