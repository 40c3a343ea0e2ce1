"""Session: the tree operations on top of one SessionStorage.

Appends add a child of the leaf and advance it; moving the leaf is a pointer move that the
storage persists as a `leaf` entry. Nothing is ever rewritten or deleted. An unknown id raises
EntryNotFoundError (naming the id) before anything is written.

The leaf is the person's place. A run (an agent working on a branch) writes through a
`BranchWriter` (`Session.branch`): under its own tip, with the same append surface; the leaf moves
with it only while the person is at that tip (issue 39). Several runs may write at once: appends
and moves take turns (one lock), so each sees where the leaf is as it writes.

Every change is told on `changes` (an EventBus of `Appended` / `LeafMoved`), synchronously,
right after the storage has it and before the call returns, whoever made it (the agent
persisting a reply, a compaction, a label, a model change, an entry adopted from another
writer). Its listeners must be synchronous and must not raise (treechat.agent.bus).
"""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import TypeVar

from treechat.agent.bus import EventBus
from treechat.agent.types import AgentMessage, Json, JsonObject
from treechat.storage.base import EntryNotFoundError, PathState, SessionStorage
from treechat.storage.model import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    ContentBlock,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    KnownEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    parse_message,
)
from treechat.storage.well_formed import well_formed

from .context import SessionContext, build_context
from .events import Appended, LeafMoved, SessionChange

E = TypeVar("E", bound=KnownEntry)


class _Current(Enum):
    LEAF = "the current leaf"  # a default apart from None, which is a real position (before the first entry)


_CURRENT = _Current.LEAF


class _Appends:
    """The append surface (what the agent, the compactor and the checkpoints write with) and the
    reads at the writer's own place: a `Session` writes at the person's leaf, a `BranchWriter`
    at its tip. Subclasses say where (`_position`) and how (`_append`)."""

    session_id: str
    storage: SessionStorage

    def _position(self) -> str | None:
        raise NotImplementedError

    async def _append(self, cls: type[E], **fields: object) -> str:
        raise NotImplementedError

    async def append_message(self, message: AgentMessage | JsonObject) -> str:
        msg: AgentMessage = parse_message(message) if isinstance(message, dict) else message
        if msg.role in ("branchSummary", "compactionSummary"):
            raise ValueError(f"a {msg.role} message is stored with its own entry type, not append_message")
        return await self._append(MessageEntry, message=msg)

    async def append_model_change(self, provider: str, model_id: str) -> str:
        return await self._append(ModelChangeEntry, provider=provider, model_id=model_id)

    async def append_thinking_level_change(self, level: str) -> str:
        return await self._append(ThinkingLevelChangeEntry, thinking_level=level)

    async def append_active_tools_change(self, names: list[str]) -> str:
        return await self._append(ActiveToolsChangeEntry, active_tool_names=list(names))

    async def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        *,
        tokens_after: int | None = None,
        retained_tail: bool | None = None,
        trigger: str | None = None,
        details: Json = None,
    ) -> str:
        if first_kept_entry_id is not None:
            await self._require(first_kept_entry_id)
        return await self._append(
            CompactionEntry,
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            retained_tail=retained_tail,
            trigger=trigger,
            details=details,
        )

    async def append_custom(self, custom_type: str, data: Json = None) -> str:
        return await self._append(CustomEntry, custom_type=custom_type, data=data)

    async def append_custom_message(
        self, custom_type: str, content: str | list[ContentBlock], display: bool = True, details: Json = None
    ) -> str:
        return await self._append(
            CustomMessageEntry, custom_type=custom_type, content=content, display=display, details=details
        )

    async def append_label(self, target_id: str, label: str | None) -> str:
        """Label an entry (the last label wins; None or "" clears). Like Pi, the label entry
        becomes the leaf; it contributes nothing to the context."""
        await self._require(target_id)
        label = (label or "").strip() or None
        return await self._append(LabelEntry, target_id=target_id, label=label)

    async def append_session_info(self, name: str) -> str:
        """Name the session (the last name wins; blank clears). Appended at the leaf like any
        entry, so naming never forks the conversation."""
        return await self._append(SessionInfoEntry, name=name.strip())

    async def append_branch_summary(self, summary: str, *, details: Json = None) -> str:
        """A branch_summary child of this place (its fromId that entry, "root" before the first entry)."""
        return await self._append(BranchSummaryEntry, from_id=self._position() or "root", summary=summary,
                                  details=details)

    # ------------------------------------------------------------ reads

    async def _require(self, entry_id: str) -> Entry:
        entry = await self.storage.get_entry(entry_id)
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    async def get_entry(self, entry_id: str) -> Entry | None:
        return await self.storage.get_entry(entry_id)

    async def get_branch(self, from_id: str | None | _Current = _CURRENT) -> list[Entry]:
        """The path root → `from_id` (default: this place), every entry type included."""
        leaf = self._position() if from_id is _Current.LEAF else from_id
        if leaf is None:
            return []
        await self._require(leaf)
        return await self.storage.get_path_to_root(leaf)

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        return await self.storage.get_children(parent_id)

    async def path_state(self, leaf_id: str | None | _Current = _CURRENT) -> PathState:
        leaf = self._position() if leaf_id is _Current.LEAF else leaf_id
        return await self.storage.get_path_state(leaf)

    async def build_session_context(self, leaf_id: str | None | _Current = _CURRENT) -> SessionContext:
        leaf = self._position() if leaf_id is _Current.LEAF else leaf_id
        if leaf is None:
            return SessionContext()
        await self._require(leaf)
        path = await self.storage.get_path_to_root_or_compaction(leaf)
        return build_context(path, await self.storage.get_path_state(leaf))


class Session(_Appends):
    def __init__(self, storage: SessionStorage, leaf_id: str | None):
        self.storage = storage
        self.session_id = storage.session_id
        self.leaf_id = leaf_id  # the person's place, the one owner of it: every append goes through here
        self.changes: EventBus[SessionChange] = EventBus()
        # one append or move at a time, whoever makes it (runs on several branches, the person):
        # each sees where the leaf is when it writes, so a run follows it or leaves it exactly
        self._writing = asyncio.Lock()
        self.leaf_unsaved = False  # a run's append left the stored leaf behind (JSONL): `settle` puts it back

    @classmethod
    async def open(cls, storage: SessionStorage) -> Session:
        return cls(storage, await storage.get_leaf_id())

    def branch(self, tip: str | None | _Current = _CURRENT, *, run: str | None = None,
               beside: bool = False) -> BranchWriter:
        """A writer appending under `tip` (default: wherever the leaf is, until `pin`ned): a run's
        own branch. When the leaf is at its tip as it appends, the leaf moves with it (the person
        stays at the run's live end); elsewhere the leaf stays. `beside`: a branch started beside
        the person's place (one prompt to several models): its first append leaves the leaf at
        `tip` even when the leaf is there. Its appends are told on `changes` tagged with `run`."""
        return BranchWriter(self, tip, run, beside=beside)

    # ------------------------------------------------------------ appends

    def _position(self) -> str | None:
        return self.leaf_id

    async def _append(self, cls: type[E], **fields: object) -> str:
        async with self._writing:
            return await self._write(None, cls, fields)

    async def _append_by(self, writer: BranchWriter, cls: type[E], fields: dict[str, object]) -> str:
        async with self._writing:
            return await self._write(writer, cls, fields)

    async def _write(self, writer: BranchWriter | None, cls: type[E], fields: dict[str, object]) -> str:
        parent = self.leaf_id if writer is None else writer.tip
        follow = parent == self.leaf_id and not (writer is not None and writer.at_fork)
        entry_id = await self.storage.create_entry_id()
        given = {k: v for k, v in fields.items() if v is not None}  # a field not given is not written
        entry = cls.model_validate({"id": entry_id, "parent_id": parent, **given})
        entry = well_formed(entry)  # e.g. half an emoji from a stream: UTF-8 storage cannot hold it
        if follow:
            await self.storage.append_entry(entry)
        else:
            await self.storage.append_entry(entry, move_leaf=False)
        if follow:
            self.leaf_id = entry_id
            self.leaf_unsaved = False
        else:
            self.leaf_unsaved = True
        if writer is not None:
            writer.advanced(entry_id)
        self.changes.emit_now(Appended(entry, run=writer.run if writer is not None else None))
        return entry_id

    async def settle(self) -> None:
        """Put the stored leaf back on the person's after runs wrote elsewhere (a run ended, the
        session is left): JSONL writes one `leaf` line; the others have it right already."""
        if not self.leaf_unsaved:
            return
        async with self._writing:
            await self.storage.set_leaf_id(self.leaf_id)
            self.leaf_unsaved = False

    def adopt(self, entry: Entry) -> None:
        """Another writer (a process, a machine) appended `entry` right under our leaf: it
        becomes the leaf, and observers hear of it as of any append. Nothing is written: the
        entry is stored already."""
        self.leaf_id = entry.id
        self.changes.emit_now(Appended(entry))

    # ------------------------------------------------------------ navigation

    async def move_to(self, entry_id: str | None, summary: str | None = None) -> None:
        """Move the leaf to `entry_id` (None: before the first entry). With a summary, append a
        branch_summary there instead (its fromId is the position, "root" for None)."""
        if entry_id is not None:
            await self._require(entry_id)
        async with self._writing:
            if summary is not None:
                self.leaf_id = entry_id
                await self._write(None, BranchSummaryEntry, {"from_id": entry_id or "root", "summary": summary})
                return
            if entry_id == self.leaf_id:
                return
            await self.storage.set_leaf_id(entry_id)
            self.leaf_id = entry_id
            self.leaf_unsaved = False
        self.changes.emit_now(LeafMoved(entry_id))

    async def reset_leaf(self) -> None:
        await self.move_to(None)

    async def get_label(self, entry_id: str) -> str | None:
        return await self.storage.get_label(entry_id)

    async def get_session_name(self) -> str | None:
        return await self.storage.get_session_name()


class BranchWriter(_Appends):
    """Appends under its own tip: a run's branch (`Session.branch`). Until `pin`ned it follows
    the session's leaf (the agent at rest, where the person is); pinned, its tip is the last
    entry it appended. Reads (`get_branch`, `build_session_context`, …) are at its tip."""

    def __init__(self, session: Session, tip: str | None | _Current, run: str | None, *, beside: bool = False) -> None:
        self.session = session
        self.session_id = session.session_id
        self.storage = session.storage
        self.run = run
        self._follows = tip is _Current.LEAF and not beside
        self._tip: str | None = (session.leaf_id if beside else None) if isinstance(tip, _Current) else tip
        self._beside = beside
        self._fork = self._tip  # (`beside`: where it branches from)

    @property
    def at_fork(self) -> bool:
        """A branch made `beside` the person's place that has appended nothing yet: its tip is
        still the entry it branches from, which is not its run's (the leaf is not taken along,
        and the person there is not at this run's live end)."""
        return self._beside and self._tip == self._fork

    @property
    def tip(self) -> str | None:
        return self.session.leaf_id if self._follows else self._tip

    @property
    def leaf_id(self) -> str | None:
        """Where this writer appends (its tip): what the compactor and the checkpoints read."""
        return self.tip

    @property
    def follows_leaf(self) -> bool:
        return self._follows

    def pin(self, run: str | None = None) -> None:
        """From now on this writer keeps its own tip (a run starts: the person may go elsewhere)."""
        self._tip, self._follows = self.tip, False
        if run is not None:
            self.run = run

    def follow_leaf(self) -> None:
        """Back to following the leaf (its run ended where the person is)."""
        self._follows = True

    def advanced(self, entry_id: str) -> None:
        """The session stored this writer's entry: it is the tip now (the session calls this)."""
        if not self._follows:
            self._tip = entry_id

    def _position(self) -> str | None:
        return self.tip

    async def _append(self, cls: type[E], **fields: object) -> str:
        return await self.session._append_by(self, cls, fields)

    async def move_to(self, entry_id: str | None, summary: str | None = None) -> None:
        """Move the session's leaf (a writer at rest goes with it; a pinned one's tip goes there)."""
        await self.session.move_to(entry_id, summary)
        if not self._follows:
            self._tip = self.session.leaf_id
