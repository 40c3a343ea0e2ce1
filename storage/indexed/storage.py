"""`IndexedSessionStorage`: one session held in an `EntryIndex`, the memory and JSONL backends'
`SessionStorage`. Every read is answered from memory; a subclass only decides where a new line
goes (`_persist`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..base import (
    AppendedEntries,
    EntryCursor,
    PathState,
    SessionStats,
    SessionSummary,
    StorageError,
    TreeRow,
)
from ..json_types import SessionHeader
from ..model import (
    Entry,
    LeafEntry,
    SessionMetadata,
)
from ..model_lite import entry_json, ms_to_iso
from ..tree.columns import TreeColumns, columns_from_rows
from ..views import decode_skeleton
from .entries import EntryIndex


def _id_from_session_path(path: object) -> str | None:
    """Pi names files `<ts>_<sessionId>.jsonl`; recover the id of a `parentSession` path."""
    if not isinstance(path, str) or "_" not in Path(path).name:
        return None
    return Path(path).stem.split("_", 1)[1] or None


class IndexedSessionStorage:
    """One session held in an `EntryIndex`. Subclasses persist lines by overriding `_persist`."""

    # The stored leaf is the last line written (JSONL): an append that leaves the leaf where it
    # was makes it wrong until a `leaf` line puts it back (`set_leaf_id`, `close`).
    LEAF_IS_LAST_LINE = False

    def __init__(self, header: SessionHeader, index: EntryIndex | None = None, path: Path | None = None):
        self.header = header
        self.session_id: str = header["id"]
        self.index = index or EntryIndex()
        self.path = path
        self.closed = False
        self.leaf_behind = False  # the last line this object wrote is not its leaf (LEAF_IS_LAST_LINE)

    # ------------------------------------------------------------ persistence hooks

    def _persist(self, lines: list[str]) -> None:
        """Make `lines` (JSON, no newline) durable before they are indexed. In memory: nothing."""

    def _write(self, lines: list[str], *, move_leaf: bool = True) -> None:
        """Persist and index lines this process wrote (the leaf follows them unless `move_leaf`
        is False: a run writing a branch the person is not on)."""
        skels = [decode_skeleton(line) for line in lines]
        self._persist(lines)
        for skel, line in zip(skels, lines):
            self.index.add(skel, line, move_leaf=move_leaf)
        self.leaf_behind = self.LEAF_IS_LAST_LINE and not move_leaf

    # ------------------------------------------------------------ SessionStorage

    async def get_metadata(self) -> SessionMetadata:
        h = self.header
        return SessionMetadata(
            id=self.session_id,
            created_at=h.get("timestamp") or "",
            cwd=h.get("cwd") or "",
            name=self.index.name,
            path=str(self.path) if self.path else None,
            parent_session_id=h.get("parentSessionId") or _id_from_session_path(h.get("parentSession")),
            parent_entry_id=h.get("parentEntryId"),
        )

    async def get_leaf_id(self) -> str | None:
        return self.index.leaf_id

    async def set_leaf_id(self, leaf_id: str | None) -> None:
        if leaf_id is not None:
            self.index.require(leaf_id)
        if leaf_id == self.index.leaf_id and not self.leaf_behind:
            return  # already where the file says it is; a marker would change nothing
        marker = LeafEntry(id=self.index.new_id(), parent_id=leaf_id, target_id=leaf_id)
        self._write([entry_json(marker)])

    async def create_entry_id(self) -> str:
        return self.index.new_id()

    async def append_entry(self, entry: Entry, *, move_leaf: bool = True) -> None:
        if isinstance(entry, LeafEntry):
            raise StorageError("A leaf entry is written by set_leaf_id, not append_entry")
        self.index.check_append(entry)
        # The stored line is a private copy: later changes to the caller's object cannot reach it.
        self._write([entry_json(entry)], move_leaf=move_leaf)

    async def get_entry(self, entry_id: str) -> Entry | None:
        return self.index.fresh_one(entry_id)

    async def find_entries(self, type: str) -> list[Entry]:
        return self.index.fresh_at(self.index.of_type(type))

    async def get_children(self, parent_id: str | None) -> list[Entry]:
        return self.index.fresh_at(self.index.children_of(parent_id))

    async def get_label(self, entry_id: str) -> str | None:
        return self.index.label(entry_id)

    async def get_labels(self) -> dict[str, str]:
        return self.index.labels()

    async def get_session_name(self) -> str | None:
        return self.index.name

    async def get_session_stats(self) -> SessionStats:
        return self.index.stats

    async def get_path_state(self, entry_id: str | None) -> PathState:
        return self.index.path_state(entry_id)

    async def get_path_to_root(self, leaf_id: str) -> list[Entry]:
        return self.index.fresh_path(self.index.path_to_root(leaf_id))

    async def get_path_to_root_or_compaction(self, leaf_id: str) -> list[Entry]:
        return self.index.fresh_path(self.index.path_to_root_or_compaction(leaf_id))

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        return self.index.fresh_at(self.index.window(cursor))

    async def get_tree_rows(self) -> list[TreeRow]:
        return self.index.tree_rows()

    async def get_tree_columns(self) -> TreeColumns:
        return columns_from_rows(self.index.tree_rows())

    async def get_entries_by_ids(self, entry_ids: Sequence[str]) -> list[Entry]:
        return self.index.fresh_many(entry_ids)

    async def get_path_rows(self, leaf_id: str) -> list[TreeRow]:
        return self.index.rows_at(self.index.path_to_root_or_compaction(leaf_id))

    async def poll_appended(self) -> AppendedEntries:
        """Nothing else can write to a session held in this process's memory."""
        return AppendedEntries()

    def refresh(self) -> None:
        """Catch up with other writers (a file another process appended to); nothing in memory."""

    async def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------ catalog helpers

    def summary(self) -> SessionSummary:
        h, idx = self.header, self.index
        created = h.get("timestamp") or ""
        modified_ms = idx.modified_ms
        modified = (ms_to_iso(modified_ms) if modified_ms is not None else "") or created
        stats = idx.stats
        return SessionSummary(
            id=self.session_id,
            created_at=created,
            modified_at=modified,
            name=idx.name,
            cwd=h.get("cwd") or "",
            entry_count=stats.entry_count,
            message_count=stats.message_count,
            total_tokens=stats.total_tokens,
            cost_total=stats.cost_total,
            first_message=idx.first_user_text,
            path=str(self.path) if self.path else None,
            parent_session_id=h.get("parentSessionId") or _id_from_session_path(h.get("parentSession")),
            parent_entry_id=h.get("parentEntryId"),
        )
