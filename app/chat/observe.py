"""What happened: the session's appends and leaf moves and the agent's events, as the chat's
state and its told changes (every append, whoever made it, takes this one path).

An agent or session event becomes the controller's own in one step (`on_agent_event`): one
`match` naming every kind (`assert_never`: a new kind is a mypy error here until it says what it
means for a front end), where the state it needs (a preview on screen, a run that could not
save) is at hand."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, assert_never

from treechat.agent.events import (
    AgentEnd,
    AgentStart,
    ImagesReplaced,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    RetryWait,
    StreamWait,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from treechat.chat.errors import ChatError
from treechat.chat.events import (
    CompactionEnded,
    CompactionStarted,
    EntryAppended,
    Failed,
    HeaderChanged,
    LabelChanged,
    Notice,
    QueueChanged,
    ReplyPending,
    ReplyStreaming,
    RunEnded,
    RunsChanged,
    RunStarted,
    StatusChanged,
    Succeeded,
    Unsaved,
    Waiting,
)
from treechat.prompts.context import images_replaced_note
from treechat.session.events import (
    ActiveToolsChanged,
    Appended,
    CompactionEnd,
    CompactionStart,
    LeafMoved,
    ModelChanged,
    PersistFailed,
    QueueUpdate,
    SessionChange,
    SessionEvent,
    SessionReloaded,
    ThinkingLevelChanged,
)
from treechat.storage.aggregates import advance_path_state, tree_row
from treechat.storage.base import StorageError
from treechat.storage.model import AssistantMessage, Entry, LabelEntry, MessageEntry, SessionInfoEntry, UserMessage

if TYPE_CHECKING:
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState, Run
    from treechat.chat.tree import ChatTree


class Observer:
    def __init__(self, s: ChatState, *, shown: Shown, trees: ChatTree) -> None:
        self.s = s
        self.shown = shown
        self.trees = trees
        self._refreshing: set[asyncio.Task[None]] = set()

    def on_session_change(self, change: SessionChange) -> None:
        match change:
            case Appended():
                self._on_append(change.entry, change.run)
            case LeafMoved():
                self._on_leaf(change.leaf_id)
            case _:
                assert_never(change)

    def _on_append(self, entry: Entry, run: str | None) -> None:
        row = tree_row(entry)
        self.trees.grow(row)
        if self.s.files is not None:
            self.s.files.add_entry(entry)
        leaf = self.s.session.leaf_id
        if leaf != entry.id:
            pass  # a run's entry on a branch the person is not on: the leaf's path state is as it was
        elif self.s.state_leaf == entry.parent_id:
            self.s.path_state = advance_path_state(self.s.path_state, entry)
            self.s.state_leaf = entry.id
        else:  # appended elsewhere than at our state (a branch summary after a move): re-read soon
            self.s.state_leaf = None
            task = asyncio.get_running_loop().create_task(self._refresh_state())
            self._refreshing.add(task)  # held until done (a task nobody holds can vanish mid-way)
            task.add_done_callback(self._refreshing.discard)
        if run is not None and self.s.preview_id is not None and self.s.preview_id == entry.parent_id:
            self.s.preview_id = entry.id  # a run's branch previewed at its tip: it grows on screen
        shown = entry.id == (self.s.preview_id or leaf)
        self.s.emit(EntryAppended(entry=entry, row=row, leaf_id=leaf, shown=shown,
                                  siblings=self.shown.siblings(entry.id), run=run))
        if run is not None:
            self.s.emit(RunsChanged())  # its tip moved
        header_changed = False
        if isinstance(entry, LabelEntry):
            self.s.emit(LabelChanged(entry.target_id, entry.label, self.trees.relabel(entry.target_id, entry.label)))
        elif isinstance(entry, SessionInfoEntry):
            self.s.name = entry.name or None
            header_changed = True
        elif self.s.first_prompt is None and isinstance(entry, MessageEntry) and entry.message.role == "user":
            header_changed = True
        if header_changed or isinstance(entry, (MessageEntry,)) or entry.type in ("compaction", "branch_summary"):
            self.s.emit(HeaderChanged())
        if leaf == entry.id:
            self.s.emit(StatusChanged())

    def _on_leaf(self, leaf_id: str | None) -> None:
        if self.s.state_leaf != leaf_id:
            self.s.state_leaf = None  # the controller re-reads the state after its own moves

    async def _refresh_state(self) -> None:
        """The path state read again; a store gone bad says so on the next read or write, and
        the status keeps its last figures meanwhile (nothing here can be lost unseen)."""
        try:
            await self.load_state()
        except (StorageError, OSError, ChatError):  # (ChatError: the session was closed meanwhile)
            return
        self.s.emit(StatusChanged())

    async def load_state(self) -> None:
        leaf = self.s.session.leaf_id
        self.s.path_state = await self.s.session.storage.get_path_state(leaf)
        self.s.state_leaf = leaf

    def on_screen(self, run: Run) -> bool:
        """The run's branch is the one shown: its tip ends the path on screen (the leaf's, or a preview's)."""
        current = self.s.current
        return current is not None and run.tip == (self.s.preview_id or current.leaf_id) and not run.writer.at_fork

    async def on_agent_event(self, event: SessionEvent, run: Run) -> None:  # noqa: C901  one flat case per event kind (exhaustive)
        on_screen, rid = self.on_screen(run), run.id
        match event:
            case AgentStart():
                run.unsaved, run.live = False, True
                self.s.emit(RunStarted(rid))
            case TurnStart():
                self.s.emit(ReplyPending(run=rid, on_screen=on_screen))
            case MessageStart(message=AssistantMessage() as reply):
                self.s.emit(ReplyStreaming(reply, started=True, run=rid, on_screen=on_screen))
            case MessageUpdate():
                said = event.assistant_event
                delta = said.delta if said is not None and said.type == "text_delta" else ""
                self.s.emit(ReplyStreaming(event.message, delta=delta, run=rid, on_screen=on_screen))
            case AgentEnd():
                run.live = False
                self.s.emit(RunEnded(rid))
                last = event.messages[-1] if event.messages else None
                failed = isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted")
                # (a run whose messages were not saved did not go through; one elsewhere clears no error here)
                if not failed and not run.unsaved and on_screen:
                    self.s.emit(Succeeded())
                self.s.emit(StatusChanged())  # its tokens
            case QueueUpdate():
                if run is self.s.on_screen():  # the tray shows the queue of the branch on screen
                    self.s.emit(QueueChanged(tuple(event.steering), tuple(event.follow_up)))
                    self.s.emit(StatusChanged())
            case ModelChanged() | ThinkingLevelChanged() | ActiveToolsChanged():
                self.s.emit(StatusChanged())
            case CompactionStart():
                self.s.emit(CompactionStarted(event.reason, run=rid, on_screen=on_screen))
            case CompactionEnd():
                await self._compaction_ended(event, run, on_screen)
            case RetryWait():
                self.s.emit(Waiting(seconds=event.delay_s, reason=event.reason, kind="retry", detail=event, run=rid,
                                    on_screen=on_screen))
            case StreamWait():
                what = "no reply yet" if event.phase == "first_byte" else "the reply stopped"
                self.s.emit(Waiting(seconds=max(event.limit_s - event.waited_s, 0.0), kind="silence", detail=event,
                                    reason=f"{what} ({event.waited_s:.0f} s); Esc stops", run=rid, on_screen=on_screen))
            case PersistFailed():
                run.unsaved = True
                path = str(event.recovery_path) if event.recovery_path else None
                self.s.emit(Unsaved(event.message, event.reason, path))
                self.s.emit(Failed(("" if on_screen else "On another branch: ") + unsaved_text(event)))
            case ImagesReplaced():
                self.s.emit(Notice(images_replaced_note(event.model, event.count), "warning"))
            case (MessageStart() | MessageEnd() | TurnEnd() | ToolExecutionStart() | ToolExecutionUpdate()
                  | ToolExecutionEnd() | SessionReloaded()):
                pass  # nothing a front end shows: the entries come through the session's appends
            case _:
                assert_never(event)

    async def _compaction_ended(self, event: CompactionEnd, run: Run, on_screen: bool) -> None:
        result = event.result
        if result is None:
            self.s.emit(CompactionEnded(event.reason, error=event.error, run=run.id, on_screen=on_screen))
            return
        self.s.emit(CompactionEnded(event.reason, tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                                    run=run.id, on_screen=on_screen))
        if self.on_screen(run):  # (on another branch the path shown is not the one compacted)
            # Read inside the agent's listener chain: nothing is appended until the path is read.
            self.s.emit(await self.shown.path_changed("compaction"))
            self.s.emit(StatusChanged())


def unsaved_text(event: PersistFailed) -> str:
    """What a failed save means for the person: what was not saved and why (the store's own one
    line: a database it cannot reach names its host, never a password), what happened to the run,
    and where the message is kept."""
    path = event.recovery_path
    kept = f"It is kept in {path}." if path else "It could not be kept anywhere: copy it now."
    if isinstance(event.message, UserMessage):
        return f"Your message was not sent: it could not be saved to the session ({event.reason}). {kept}"
    what = "The reply" if isinstance(event.message, AssistantMessage) else "A message of the run"
    return f"{what} could not be saved to the session ({event.reason}); the run stopped. {kept}"
