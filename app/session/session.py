"""Session: the tree operations on top of one SessionStorage.

Appends add a child of the leaf and advance it; moving the leaf is a pointer move that the
storage persists as a `leaf` entry. Nothing is ever rewritten or deleted. An unknown id raises
EntryNotFoundError (naming the id) before anything is written.
"""

from __future__ import annotations

from typing import Any, Callable

from treechat.storage.base import EntryNotFoundError, PathState, SessionStorage
from treechat.storage.model import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    parse_message,
)
from treechat.storage.well_formed import well_formed

from .context import SessionContext, build_context

_CURRENT: Any = object()  # "the current leaf" (None is a real position: before the first entry)


# What a Session tells its observers, synchronously, right after the storage has it: the
# entry that was appended (the new leaf), or the leaf moving without a new row.
AppendObserver = Callable[[Entry], None]
LeafObserver = Callable[[str | None], None]


class Session:
    def __init__(self, storage: SessionStorage, leaf_id: str | None):
        self.storage = storage
        self.session_id = storage.session_id
        self.leaf_id = leaf_id  # the one owner of "where we are": every append goes through here
        self._on_append: list[AppendObserver] = []
        self._on_leaf: list[LeafObserver] = []

    def observe(self, on_append: AppendObserver, on_leaf: LeafObserver) -> Callable[[], None]:
        """Be told of every append (with the persisted entry) and every leaf move, whoever made
        them (the agent persisting a reply, a compaction, a label, a model change, …)."""
        self._on_append.append(on_append)
        self._on_leaf.append(on_leaf)

        def stop() -> None:
            if on_append in self._on_append:
                self._on_append.remove(on_append)
            if on_leaf in self._on_leaf:
                self._on_leaf.remove(on_leaf)

        return stop

    @classmethod
    async def open(cls, storage: SessionStorage) -> "Session":
        return cls(storage, await storage.get_leaf_id())

    # ------------------------------------------------------------ appends

    async def _append(self, cls: type, **fields: Any) -> str:
        entry_id = await self.storage.create_entry_id()
        entry = cls(id=entry_id, parent_id=self.leaf_id, **{k: v for k, v in fields.items() if v is not None})
        entry = well_formed(entry)  # e.g. half an emoji from a stream: UTF-8 storage cannot hold it
        await self.storage.append_entry(entry)
        self.leaf_id = entry_id
        for observer in list(self._on_append):
            observer(entry)
        return entry_id

    def adopt(self, entry: Entry) -> None:
        """Another writer (a process, a machine) appended `entry` right under our leaf: it
        becomes the leaf, and observers hear of it as of any append. Nothing is written: the
        entry is stored already."""
        self.leaf_id = entry.id
        for observer in list(self._on_append):
            observer(entry)

    async def append_message(self, message: Any) -> str:
        if isinstance(message, dict):
            message = parse_message(message)
        role = getattr(message, "role", None)
        if role in ("branchSummary", "compactionSummary"):
            raise ValueError(f"a {role} message is stored with its own entry type, not append_message")
        return await self._append(MessageEntry, message=message)

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
        details: Any = None,
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

    async def append_custom(self, custom_type: str, data: Any = None) -> str:
        return await self._append(CustomEntry, custom_type=custom_type, data=data)

    async def append_custom_message(
        self, custom_type: str, content: Any, display: bool = True, details: Any = None
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
        for observer in list(self._on_leaf):
            observer(entry_id)

    async def reset_leaf(self) -> None:
        await self.move_to(None)

    async def get_entry(self, entry_id: str) -> Entry | None:
        return await self.storage.get_entry(entry_id)

    async def get_branch(self, from_id: Any = _CURRENT) -> list[Entry]:
        """The path root → `from_id` (default: the leaf), every entry type included."""
        leaf = self.leaf_id if from_id is _CURRENT else from_id
        if leaf is None:
            return []
        await self._require(leaf)
        return await self.storage.get_path_to_root(leaf)

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        return await self.storage.get_children(parent_id)

    # ------------------------------------------------------------ derived state

    async def path_state(self, leaf_id: Any = _CURRENT) -> PathState:
        leaf = self.leaf_id if leaf_id is _CURRENT else leaf_id
        return await self.storage.get_path_state(leaf)

    async def build_session_context(self, leaf_id: Any = _CURRENT) -> SessionContext:
        leaf = self.leaf_id if leaf_id is _CURRENT else leaf_id
        if leaf is None:
            return SessionContext()
        await self._require(leaf)
        path = await self.storage.get_path_to_root_or_compaction(leaf)
        return build_context(path, await self.storage.get_path_state(leaf))

    async def get_label(self, entry_id: str) -> str | None:
        return await self.storage.get_label(entry_id)

    async def get_session_name(self) -> str | None:
        return await self.storage.get_session_name()
