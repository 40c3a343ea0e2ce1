"""What happened: the session's appends and leaf moves and the agent's events, as the chat's
state and its told changes (every append, whoever made it, takes this one path)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, assert_never

from treechat.agent.events import AgentStart
from treechat.chat.agent_events import CHANGES_STATUS, translate
from treechat.chat.events import (
    CompactionEnded,
    EntryAppended,
    HeaderChanged,
    LabelChanged,
    StatusChanged,
    Succeeded,
)
from treechat.chat.models import ChatError
from treechat.session.events import Appended, CompactionEnd, LeafMoved, PersistFailed, SessionChange, SessionEvent
from treechat.storage.aggregates import advance_path_state, tree_row
from treechat.storage.base import StorageError
from treechat.storage.model import Entry, LabelEntry, MessageEntry, SessionInfoEntry

if TYPE_CHECKING:
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.tree import ChatTree


class Observer:
    def __init__(self, s: ChatState, *, shown: Shown, trees: ChatTree) -> None:
        self.s = s
        self.shown = shown
        self.trees = trees
        self._refreshing: set[asyncio.Task[None]] = set()
        self._unsaved_run = False  # the running run could not save a message of it

    def on_session_change(self, change: SessionChange) -> None:
        match change:
            case Appended():
                self._on_append(change.entry)
            case LeafMoved():
                self._on_leaf(change.leaf_id)
            case _:
                assert_never(change)

    def _on_append(self, entry: Entry) -> None:
        row = tree_row(entry)
        self.trees.grow(row)
        if self.s.files is not None:
            self.s.files.add_entry(entry)
        if self.s.state_leaf == entry.parent_id:
            self.s.path_state = advance_path_state(self.s.path_state, entry)
            self.s.state_leaf = entry.id
        else:  # appended elsewhere than at our state (a branch summary after a move): re-read soon
            self.s.state_leaf = None
            task = asyncio.get_running_loop().create_task(self._refresh_state())
            self._refreshing.add(task)  # held until done (a task nobody holds can vanish mid-way)
            task.add_done_callback(self._refreshing.discard)
        self.s.emit(EntryAppended(entry=entry, row=row, leaf_id=self.s.session.leaf_id, shown=self.s.preview_id is None,
                                 siblings=self.shown.siblings(entry.id)))
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

    async def on_agent_event(self, event: SessionEvent) -> None:
        if isinstance(event, CompactionEnd):
            await self._compaction_ended(event)
            return
        if isinstance(event, (AgentStart, PersistFailed)):
            self._unsaved_run = isinstance(event, PersistFailed)
        for chat_event in translate(event, previewing=self.s.preview_id is not None):
            if isinstance(chat_event, Succeeded) and self._unsaved_run:
                continue  # a run whose messages could not be saved did not go through: its error stays
            self.s.emit(chat_event)
        if event.type in CHANGES_STATUS:
            self.s.emit(StatusChanged())

    async def _compaction_ended(self, event: CompactionEnd) -> None:
        result = event.result
        if result is None:
            self.s.emit(CompactionEnded(event.reason, error=event.error))
            return
        self.s.emit(CompactionEnded(event.reason, tokens_before=result.tokens_before, tokens_after=result.tokens_after))
        # Read inside the agent's listener chain: nothing is appended until the path is read.
        self.s.emit(await self.shown.path_changed("compaction"))
        self.s.emit(StatusChanged())
