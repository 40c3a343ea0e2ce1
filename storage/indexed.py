"""The `SessionStorage` and `SessionCatalog` logic shared by the backends that keep an `EntryIndex`.

`IndexedSessionStorage` answers every read from memory; a subclass only decides where a new line
goes (`_persist`). `IndexedCatalog` implements resolve/list/rename/fork/import/search over a few
hooks a subclass provides (which ids exist, how to load, create and remove a session).
"""

from __future__ import annotations

import asyncio
import builtins
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .aggregates import view_text
from .base import (
    AmbiguousSessionError,
    AppendedEntries,
    ChangeFeed,
    EntryCursor,
    ImportReport,
    PathState,
    SearchHit,
    SessionNotFoundError,
    SessionStats,
    SessionSummary,
    StorageError,
    StoreChange,
    TreeRow,
)
from .fork_path import forked_entries
from .gc_policy import paused
from .imports import ImportRecords, prepare_records
from .index import EntryIndex, entry_json, ms_to_iso, view_of_raw
from .json_types import Json, SessionHeader
from .model import (
    Entry,
    InvalidEntryError,
    LeafEntry,
    SessionInfoEntry,
    SessionMetadata,
    iso_to_ms,
    new_session_id,
    now_iso,
)
from .model_views import view_of_model as view_of_entry  # (a store of models: pydantic is loaded)
from .tree_columns import TreeColumns, columns_from_rows
from .views import decode_skeleton, skeleton_of


def new_header(session_id: str, cwd: str = "", **extra: Json) -> SessionHeader:
    """A v3 header in Pi's key order; extra keys with a None value are left out."""
    header: SessionHeader = {"type": "session", "version": 3, "id": session_id, "timestamp": now_iso(), "cwd": cwd}
    header.update({k: v for k, v in extra.items() if v is not None})
    return header


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


def _modified_key(s: SessionSummary) -> tuple[float, float, str]:
    def ms(iso: str) -> float:
        v = iso_to_ms(iso)
        return v if v == v else float("-inf")

    return (ms(s.modified_at), ms(s.created_at), s.id)


def _snippet(text: str, start: int, end: int, before: int = 40, after: int = 80) -> str:
    lo, hi = max(0, start - before), min(len(text), end + after)
    head = ("…" if lo > 0 else "") + text[lo:start]
    tail = text[end:hi] + ("…" if hi < len(text) else "")
    return " ".join(f"{head}[[{text[start:end]}]]{tail}".split())


class NoChanges:
    """The change feed of a store nothing else can write to (in memory): it never reports."""

    async def next_change(self, timeout: float) -> StoreChange | None:  # noqa: ASYNC109  the protocol's poll (base.ChangeFeed): no feed here, so it only waits
        await asyncio.sleep(max(timeout, 0.0))
        return None

    async def close(self) -> None:
        pass


class IndexedCatalog:
    """Catalog logic over hooks: `_ids`, `_load`, `_make`, `_store`, `_remove`, `_parent_path`."""

    def __init__(self) -> None:
        self._open: dict[str, IndexedSessionStorage] = {}
        # (done, total) while whole sessions are read (a listing's uncached files, a search): the
        # CLI draws a progress bar from it; a listing from the cache never calls it
        self.on_read: Callable[[int, int], None] | None = None

    def _reading(self, done: int, total: int) -> None:
        if self.on_read is not None:
            self.on_read(done, total)

    # ------------------------------------------------------------ hooks

    def _ids(self) -> list[str]:
        raise NotImplementedError

    def _load(self, session_id: str) -> IndexedSessionStorage:
        raise NotImplementedError

    def _make(self, header: SessionHeader) -> IndexedSessionStorage:
        """A new, empty session with this header, persisted at once."""
        raise NotImplementedError

    def _store(self, header: SessionHeader, records: ImportRecords, replace: bool) -> IndexedSessionStorage:
        """A new session holding `records`, persisted all at once (nothing if it fails)."""
        raise NotImplementedError

    def _remove(self, session_id: str) -> None:
        raise NotImplementedError

    def _parent_path(self, storage: IndexedSessionStorage) -> str | None:
        return str(storage.path) if storage.path else None

    def _summaries(self) -> list[SessionSummary]:
        return [self._get(sid).summary() for sid in self._ids()]

    # ------------------------------------------------------------ lookups

    def _resolve(self, session_ref: str) -> str:
        ids = self._ids()
        if session_ref in ids:
            return session_ref
        matches = sorted(i for i in ids if session_ref and i.startswith(session_ref))
        if not matches:
            raise SessionNotFoundError(session_ref)
        if len(matches) > 1:
            raise AmbiguousSessionError(session_ref, matches)
        return matches[0]

    def _get(self, session_id: str) -> IndexedSessionStorage:
        storage = self._open.get(session_id)
        if storage is None:
            storage = self._open[session_id] = self._load(session_id)
        return storage

    def _new(self, header: SessionHeader) -> IndexedSessionStorage:
        if header["id"] in self._ids():
            raise StorageError(f"A session with id {header['id']} already exists")
        storage = self._open[header["id"]] = self._make(header)
        return storage

    # ------------------------------------------------------------ SessionCatalog

    async def create(
        self,
        *,
        session_id: str | None = None,
        cwd: str = "",
        parent_session_id: str | None = None,
        parent_entry_id: str | None = None,
    ) -> IndexedSessionStorage:
        parent_path = None
        if parent_session_id is not None and parent_session_id in self._ids():
            parent_path = self._parent_path(self._get(parent_session_id))
        header = new_header(
            session_id or new_session_id(),
            cwd,
            parentSession=parent_path,
            parentSessionId=parent_session_id,
            parentEntryId=parent_entry_id,
        )
        return self._new(header)

    async def open(self, session_ref: str) -> IndexedSessionStorage:
        storage = self._get(self._resolve(session_ref))
        storage.refresh()
        return storage

    async def latest(self) -> IndexedSessionStorage | None:
        rows = await self.list()
        return self._get(rows[0].id) if rows else None

    async def list(self) -> list[SessionSummary]:
        return sorted(self._summaries(), key=_modified_key, reverse=True)

    async def has_session(self, session_id: str) -> bool:
        return session_id in self._ids()

    @property
    def read_only(self) -> str | None:
        return None

    async def rename(self, session_ref: str, name: str) -> None:
        storage = await self.open(session_ref)
        entry = SessionInfoEntry(id=storage.index.new_id(), parent_id=storage.index.leaf_id, name=name.strip())
        await storage.append_entry(entry)

    async def fork(self, session_ref: str, entry_id: str) -> IndexedSessionStorage:
        source = await self.open(session_ref)
        index = source.index
        path = index.fresh_path(index.path_to_root(entry_id))
        stamps = index.label_timestamps()
        labels = [(target, label, stamps[target]) for target, label in index.labels().items()]
        entries = forked_entries(path, labels, lambda taken: index.new_id(taken))
        header = new_header(
            new_session_id(),
            source.header.get("cwd") or "",
            parentSession=self._parent_path(source),
            parentSessionId=source.session_id,
            parentEntryId=entry_id,
        )
        records = prepare_records([(entry_json(e), view_of_entry(e)) for e in entries], None, ImportReport(), natural=True)
        fork = self._open[header["id"]] = self._store(header, records, replace=False)
        return fork

    async def delete(self, session_ref: str) -> None:
        session_id = self._resolve(session_ref)
        self._remove(session_id)
        self._open.pop(session_id, None)

    async def import_session(
        self, header: SessionHeader, entries: Sequence[Entry], leaf_id: str | None
    ) -> tuple[IndexedSessionStorage, ImportReport]:
        report = ImportReport()
        with paused():
            records = prepare_records([(entry_json(e), view_of_entry(e)) for e in entries], leaf_id, report)
        return await self.import_records(header, records, report)

    async def import_records(
        self, header: SessionHeader, records: ImportRecords, report: ImportReport, *, replace: bool = False
    ) -> tuple[IndexedSessionStorage, ImportReport]:
        """Store prepared records as one new session (all or nothing); `replace` overwrites a
        session with the same id."""
        records.check()
        header = {**header, "type": "session", "version": 3}
        if not isinstance(header.get("id"), str) or not header["id"]:
            header["id"] = new_session_id()
        header.setdefault("timestamp", now_iso())
        header.setdefault("cwd", "")
        report.session_id = header["id"]
        if not replace and header["id"] in self._ids():
            raise StorageError(f"A session with id {header['id']} already exists")
        if replace:
            old = self._open.pop(header["id"], None)
            if old is not None:
                await old.close()
        storage = self._open[header["id"]] = self._store(header, records, replace)
        return storage, report

    async def search(
        self, query: str, *, session_id: str | None = None, limit: int = 50, further: int = 0
    ) -> builtins.list[SearchHit]:
        if not query.strip() or limit <= 0 or further > 0:  # every search here looks at everything
            return []
        pattern = re.compile(re.escape(query), re.IGNORECASE)
        if session_id is not None:
            sessions = [self._get(self._resolve(session_id))]
        else:
            sessions = []
            rows = await self.list()
            for i, row in enumerate(rows):
                self._reading(i, 2 * len(rows))  # reading each file, then searching each: two halves
                try:
                    sessions.append(self._get(row.id))
                except (StorageError, OSError, MemoryError):
                    continue  # a file that broke since it was listed: the others are still searched
        hits: builtins.list[tuple[int, int, int, SearchHit]] = []
        for order, storage in enumerate(sessions):
            self._reading(len(sessions) + order, 2 * len(sessions))
            index = storage.index
            for seq in range(len(index)):
                skel = index.skeleton_at(seq)
                if skel.type == "leaf" or index.is_dead(seq):
                    continue
                try:
                    view = view_of_raw(index.raw_at(seq))
                except (InvalidEntryError, RecursionError, ValueError):
                    continue
                text = view_text(view)
                m = pattern.search(text)
                if m is None:
                    continue
                hit = SearchHit(
                    session_id=storage.session_id,
                    entry_id=view.id,
                    type=view.type,
                    role=view.role,
                    snippet=_snippet(text, m.start(), m.end()),
                    rank=float(m.start()),
                    session_name=index.name,
                    timestamp=view.timestamp,
                    session_title=index.name or index.first_user_text,
                )
                hits.append((m.start(), order, seq, hit))
        hits.sort(key=lambda h: h[:3])
        return [h[3] for h in hits[:limit]]

    def watch(self) -> ChangeFeed:
        return NoChanges()

    async def close(self) -> None:
        for storage in self._open.values():
            await storage.close()
        self._open.clear()


def index_of(records: ImportRecords) -> EntryIndex:
    """An index holding prepared records (their view serves as skeleton)."""
    index = EntryIndex()
    with paused():
        for raw, view in zip(records.raws, records.views):
            index.add(skeleton_of(view), raw)
    return index
