"""Session: the tree operations on top of one SessionStorage.

Appends add a child of the leaf and advance it; moving the leaf is a pointer move that the
storage persists as a `leaf` entry. Nothing is ever rewritten or deleted. An unknown id raises
EntryNotFoundError (naming the id) before anything is written.

Every change is told on `changes` (an EventBus of `Appended` / `LeafMoved`), synchronously,
right after the storage has it and before the call returns, whoever made it (the agent
persisting a reply, a compaction, a label, a model change, an entry adopted from another
writer). Its listeners must be synchronous and must not raise (treechat.agent.bus).
"""

from __future__ import annotations

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


class Session:
    def __init__(self, storage: SessionStorage, leaf_id: str | None):
        self.storage = storage
        self.session_id = storage.session_id
        self.leaf_id = leaf_id  # the one owner of "where we are": every append goes through here
        self.changes: EventBus[SessionChange] = EventBus()

    @classmethod
    async def open(cls, storage: SessionStorage) -> Session:
        return cls(storage, await storage.get_leaf_id())

    # ------------------------------------------------------------ appends

    async def _append(self, cls: type[E], **fields: object) -> str:
        entry_id = await self.storage.create_entry_id()
        given = {k: v for k, v in fields.items() if v is not None}  # a field not given is not written
        entry = cls.model_validate({"id": entry_id, "parent_id": self.leaf_id, **given})
        entry = well_formed(entry)  # e.g. half an emoji from a stream: UTF-8 storage cannot hold it
        await self.storage.append_entry(entry)
        self.leaf_id = entry_id
        self.changes.emit_now(Appended(entry))
        return entry_id

    def adopt(self, entry: Entry) -> None:
        """Another writer (a process, a machine) appended `entry` right under our leaf: it
        becomes the leaf, and observers hear of it as of any append. Nothing is written: the
        entry is stored already."""
        self.leaf_id = entry.id
        self.changes.emit_now(Appended(entry))

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

    # ------------------------------------------------------------ navigation

    async def _require(self, entry_id: str) -> Entry:
        entry = await self.storage.get_entry(entry_id)
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    async def move_to(self, entry_id: str | None, summary: str | None = None) -> None:
        """Move the leaf to `entry_id` (None: before the first entry). With a summary, append a
        branch_summary there instead (its fromId is the position, "root" for None)."""
        if entry_id is not None:
            await self._require(entry_id)
        if summary is not None:
            self.leaf_id = entry_id
            await self._append(BranchSummaryEntry, from_id=entry_id or "root", summary=summary)
            return
        if entry_id == self.leaf_id:
            return
        await self.storage.set_leaf_id(entry_id)
        self.leaf_id = entry_id
        self.changes.emit_now(LeafMoved(entry_id))

    async def reset_leaf(self) -> None:
        await self.move_to(None)

    async def get_entry(self, entry_id: str) -> Entry | None:
        return await self.storage.get_entry(entry_id)

    async def append_branch_summary(self, summary: str, *, details: Json = None) -> str:
        """A branch_summary child of the leaf (its fromId the leaf, "root" before the first entry)."""
        return await self._append(BranchSummaryEntry, from_id=self.leaf_id or "root", summary=summary, details=details)

    async def get_branch(self, from_id: str | None | _Current = _CURRENT) -> list[Entry]:
        """The path root → `from_id` (default: the leaf), every entry type included."""
        leaf = self.leaf_id if from_id is _Current.LEAF else from_id
        if leaf is None:
            return []
        await self._require(leaf)
        return await self.storage.get_path_to_root(leaf)

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        return await self.storage.get_children(parent_id)

    # ------------------------------------------------------------ derived state

    async def path_state(self, leaf_id: str | None | _Current = _CURRENT) -> PathState:
        leaf = self.leaf_id if leaf_id is _Current.LEAF else leaf_id
        return await self.storage.get_path_state(leaf)

    async def build_session_context(self, leaf_id: str | None | _Current = _CURRENT) -> SessionContext:
        leaf = self.leaf_id if leaf_id is _Current.LEAF else leaf_id
        if leaf is None:
            return SessionContext()
        await self._require(leaf)
        path = await self.storage.get_path_to_root_or_compaction(leaf)
        return build_context(path, await self.storage.get_path_state(leaf))

    async def get_label(self, entry_id: str) -> str | None:
        return await self.storage.get_label(entry_id)

    async def get_session_name(self) -> str | None:
        return await self.storage.get_session_name()
