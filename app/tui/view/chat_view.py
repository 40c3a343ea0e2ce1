"""The one refresh path: each controller event reconciles the widgets it affects, once.

Every event arrives in one `ChatMessage`, which the App hands to `ChatView.show`; it is dispatched
with `match` (`assert_never`: a new kind of event is a type error until it is handled). A `ChatDelta` is what changed in one turn
of the controller's loop; handlers render what the event carries (the snapshot of that moment)
and never read the controller's state or storage to find out what happened. The tree index they
are handed (`SessionOpened`, `TreeLoaded`) only grows: the transcript's window reads the items it
scrolls to by id, as the tree is then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from treechat.storage import gc_policy
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome

if TYPE_CHECKING:
    from treechat.chat import events as ev
    from treechat.chat.events import ChatEvent, Header, Mark, Readiness, Status
    from treechat.shown_path import ShownPath
    from treechat.storage.tree.index import TreeIndex

    from ..composer.sending import Sending
    from ..sessions.feature import Sessions
    from ..shell import Shell
    from ..tree.moves import TreeMoves
    from ..tree.panel import TreePanel
    from ..workspace.feature import Workspace

# The storage vocabulary, the transcript's items and the dialogs are imported where they are used:
# no controller event comes before the session opens, after the first frame (app/tui/startup/).


class ChatView:
    """Handed the features whose part an event is: the queue tray's (`sending`), the drafts a move
    replaced (`moves`), the tree panel, the restore offer (`workspace`), an open sessions list."""

    def __init__(self, shell: Shell, *, sending: Sending, moves: TreeMoves, panel: TreePanel, workspace: Workspace,
                 sessions: Sessions) -> None:
        self.shell, self.sending, self.moves, self.panel = shell, sending, moves, panel
        self.workspace, self.sessions = workspace, sessions
        self._tree: TreeIndex | None = None  # the index the last SessionOpened / TreeLoaded handed over
        self._welcome_readiness: Readiness | None = None

    async def show(self, event: ChatEvent) -> None:  # noqa: C901  one flat case per event kind (exhaustive)
        from treechat.chat import events as ev

        match event:
            case ev.ReplyStreaming():  # first: once per network read while a reply streams
                await self._reply_streaming(event)
            case ev.ReplyPending():
                if not event.previewing:
                    await self.shell.transcript.set_pending()
            case ev.ChatDelta():
                await self._delta(event)
            case ev.SessionOpened():
                await self._session_opened(event)
            case ev.TreeLoaded():
                self._tree_loaded(event)
            case ev.Focused():
                await self._focused(event.entry_id)
            case ev.CompactionStarted():
                self.shell.notify(f"Compacting the conversation ({event.reason})…", timeout=3)
            case ev.CompactionEnded():
                self._compaction_ended(event)
            case ev.Waiting():
                label = "retrying in" if event.kind == "retry" else "gives up in"
                self.shell.ui(StatusBar).wait(event.seconds, event.reason, label=label)  # a countdown in the status bar
            case ev.Readiness():
                self._welcome_model(readiness=event)
                self._readiness_banner(event)
            case ev.Notice():
                self.shell.notify(event.text, severity=event.severity, timeout=6)
            case ev.Failed():
                self.shell.show_error(event.text)
            case ev.Unsaved():
                await self._unsaved(event)
            case ev.RestoreOffered():
                self.workspace.offered(event.plan)
            case ev.Succeeded():
                banner = self.shell.ui(Banner, "#banner")
                if banner.severity == "error":
                    banner.hide()  # an error is not news once a later run went through
            case ev.SessionsChanged():
                await self.sessions.changed()
            case _:
                assert_never(event)

    # ------------------------------------------------------------ a session, a path

    async def _session_opened(self, e: ev.SessionOpened) -> None:
        self.sending.show_queue([])  # (what was sent before the session opened stays until it goes out)
        composer = self.shell.composer
        composer.running = False
        self._tree = e.tree
        self.shell.tree_view.set_index(e.tree, e.leaf_id, loading=e.tree_loading)
        self.shell.tree_view.set_running(())  # (a session's runs are its own: leaving it stopped them)
        await self._show_path(e.path, e.marks, e.labels)
        self._header(e.header)
        self.shell.ui(StatusBar).show_status(e.status)
        self._welcome_model(status=e.status)
        self._welcome_tools(e.status)
        composer.set_history(list(e.history))
        if e.composer_text:  # the session's draft (and text to edit): before anything typed since
            typed = composer.text.strip()
            composer.set_text(f"{e.composer_text}\n\n{typed}" if typed else e.composer_text)
        self.shell.call_after_refresh(gc_policy.settle)
        self.shell.call_after_refresh(self.shell.chat.load_tree)  # a big session's whole tree: after this frame

    def _tree_loaded(self, e: ev.TreeLoaded) -> None:
        """A big session's whole tree replaces its path's: the panel (the cursor stays on its
        entry) and the `‹ n/m ›` marks of what the transcript holds."""
        from ..transcript.items import sibling_marks

        self._tree = e.tree
        self.shell.tree_view.set_index(e.tree, e.leaf_id, keep_cursor=True)
        transcript = self.shell.transcript
        for entry_id, index, count in sibling_marks([i.entry_id for i in transcript.items.loaded()], e.tree):
            transcript.set_siblings(entry_id, index, count)

    async def _show_path(self, path: ShownPath, marks: tuple[Mark, ...], labels: tuple[tuple[str, str], ...]) -> None:
        from ..transcript.items import item_ids, items_loader, transcript_items

        tree = self._tree
        assert tree is not None  # SessionOpened came first
        items = transcript_items(path, dict(labels))  # the newest entries' items; the window loads the others
        transcript = self.shell.transcript

        def marked(found: list[Mark]) -> None:
            for entry_id, index, count in found:
                transcript.set_siblings(entry_id, index, count)

        ids = item_ids(path, tree)
        await transcript.set_path(ids, items, items_loader(self.shell.chat.entries, lambda: self._tree or tree, marked))
        marked(list(marks))
        self._show_welcome(not ids)

    # ------------------------------------------------------------ what changed in one turn

    async def _delta(self, d: ev.ChatDelta) -> None:
        tree = self.shell.tree_view
        for new in d.appended:
            tree.add_row(new.row)
        for changed in d.labels:
            if changed.row is not None:
                tree.replace_row(changed.row)
        if d.appended:
            tree.set_leaf(d.appended[-1].leaf_id)
        appended = d.appended
        if d.path is not None:
            await self._path_changed(d.path)
            appended = appended[d.path_after:]  # the path holds the ones before it
        for e in appended:
            if e.shown:
                await self._entry_shown(e)
        for changed in d.labels:
            self.shell.transcript.set_label(changed.target_id, changed.label)
        if d.header is not None:
            self._header(d.header)
        if d.status is not None:
            self.shell.ui(StatusBar).show_status(d.status)
            self._welcome_model(status=d.status)
            self._welcome_tools(d.status)
        if d.queue is not None:
            self.sending.show_queue([("steer", t) for t in d.queue.steering] + [("follow_up", t) for t in d.queue.follow_up])
        if d.runs is not None:  # each running branch marked on its tip's row
            tree.set_running([r.tip for r in d.runs if r.tip is not None])
        if d.running is True:
            self.shell.composer.running = True
            gc_policy.streaming(True)  # no full collection while tokens arrive (storage.gc_policy)
        elif d.running is False:
            self.shell.composer.running = False
            self.shell.composer.elsewhere = False
            self.shell.ui(StatusBar).wait(0)
            await self.shell.transcript.set_streaming(None)
            gc_policy.streaming(False)

    async def _path_changed(self, p: ev.PathChanged) -> None:
        tree = self.shell.tree_view
        await self._show_path(p.path, p.marks, p.labels)
        tree.set_leaf(p.leaf_id)
        if p.cause == "move":
            tree.move_cursor_to(p.leaf_id)
        self.moves.draft_returns(p.leaf_id)
        # a reply streams on its own branch only: another path on screen lets it go, and on a
        # running branch the controller tells its reply as far as it came (ReplyStreaming, started)
        transcript = self.shell.transcript
        self.shell.composer.elsewhere = p.preview_id is not None
        if transcript.streaming is not None:
            await transcript.set_streaming(None)

    async def _entry_shown(self, e: ev.EntryAppended) -> None:
        """An entry appended at the end of the path on screen."""
        from treechat.storage.model import AssistantMessage, MessageEntry, UserMessage

        from ..transcript.items import item_for

        transcript = self.shell.transcript
        if isinstance(e.entry, MessageEntry) and isinstance(e.entry.message, AssistantMessage):
            await transcript.set_streaming(None)
        elif isinstance(e.entry, MessageEntry) and isinstance(e.entry.message, UserMessage):
            await transcript.follow_end()  # what the user sent, and its answer, in view however far up they were
        item = item_for(e.entry, None)  # (a new entry has no label yet)
        if item is None:
            return
        await transcript.append_message(item)
        self._show_welcome(False)
        if e.siblings is not None:
            transcript.set_siblings(e.entry.id, *e.siblings)

    async def _focused(self, entry_id: str) -> None:
        await self.shell.transcript.highlight(entry_id)
        self.panel.show()
        self.shell.tree_view.move_cursor_to(entry_id)

    def _header(self, header: Header) -> None:
        position = header.position
        if header.sub_agent_of is not None:  # first: a narrow header cuts the position's end
            position = f"a sub-agent's session, of session {header.sub_agent_of[:8]} (/back returns) · {position}"
        self.shell.ui(SessionHeader).set_session(header.title, position, header.viewing)

    # ------------------------------------------------------------ runs

    async def _reply_streaming(self, e: ev.ReplyStreaming) -> None:
        if not e.on_screen:
            return  # its branch is not the one on screen: told again, as far as it came, when it is
        transcript = self.shell.transcript
        status = self.shell.ui(StatusBar)
        if status.waiting:
            status.wait(0)  # the reply is coming: a wait shown is over
        if e.started or transcript.streaming is None:  # (or back on its branch after a preview)
            await transcript.set_streaming(e.message)
        else:
            transcript.update_streaming(e.message)

    def _compaction_ended(self, e: ev.CompactionEnded) -> None:
        if e.error:
            self.shell.show_error(e.error)
        else:
            banner = self.shell.ui(Banner, "#banner")
            if banner.severity == "error":
                banner.hide()  # e.g. an earlier "Nothing to compact": this one went through
            self.shell.notify(f"Compacted ({e.reason}): {e.tokens_before or 0:,} → {e.tokens_after or 0:,} tokens. "
                        "Every original entry is still in the tree.", timeout=6)

    # ------------------------------------------------------------ what the user should know

    def _readiness_banner(self, e: Readiness) -> None:
        banner = self.shell.ui(Banner, "#banner")
        if e.problem and self.shell.ui(Welcome).display:
            if banner.severity == "warning":
                banner.hide()  # the welcome says it, with the rest of what to do first
        elif e.problem:
            extra = f" Detected local servers: {', '.join(e.servers)} (Ctrl+L)." if e.servers else ""
            banner.show(f"{e.problem}{extra} Browsing, the tree, search and sessions work without one.", "warning")
        elif banner.severity == "warning":
            banner.hide()

    async def _unsaved(self, e: ev.Unsaved) -> None:
        """A reply that could not be saved stays on screen, a prompt goes back into the composer
        (the banner says where it was kept)."""
        from treechat.storage.model import AssistantMessage, UserMessage, message_text
        from treechat.widgets.transcript.items import TranscriptItem

        if isinstance(e.message, AssistantMessage):
            transcript = self.shell.transcript
            await transcript.set_streaming(None)
            await transcript.append_message(TranscriptItem(f"unsaved-{id(e.message)}", e.message))
        elif isinstance(e.message, UserMessage):  # not sent: back where it was typed, before what is typed since
            typed, text = self.shell.composer.text.strip(), message_text(e.message)
            self.shell.composer.set_text(f"{text}\n\n{typed}" if typed else text)

    # ------------------------------------------------------------ the welcome (an empty transcript)

    def _show_welcome(self, empty: bool) -> None:
        """An empty transcript shows the welcome in its place; the first item replaces it. (On a
        narrow terminal the tree is a closed drawer anyway: the welcome has the width.)"""
        welcome = self.shell.ui(Welcome)
        if welcome.display == empty:
            return
        welcome.display = empty
        self.shell.transcript.display = not empty
        from treechat.chat.events import Readiness

        # the banner says what the welcome no longer does
        self._readiness_banner(self._welcome_readiness or Readiness(None))

    def _welcome_model(self, *, status: Status | None = None, readiness: Readiness | None = None) -> None:
        welcome = self.shell.ui(Welcome)
        if readiness is not None:
            self._welcome_readiness = readiness
        model = status.model if status is not None else welcome.model
        known = self._welcome_readiness
        welcome.set_model(None if model == "no model" else model, known.problem if known else None,
                          known.servers if known else ())


    def _welcome_tools(self, status: Status) -> None:
        """The welcome names the tools an empty session starts with."""
        from treechat.agent.tools import BUILTIN_TOOLS

        builtin = tuple(n for n in status.tools if n in BUILTIN_TOOLS)
        self.shell.ui(Welcome).set_tools(builtin, len(status.tools) - len(builtin))

