"""`IndexedCatalog`: the memory and JSONL backends' `SessionCatalog`. It implements
resolve/list/rename/fork/import/search over a few hooks a subclass provides (which ids exist, how
to load, create and remove a session).
"""

from __future__ import annotations

import asyncio
import builtins
import re
from collections.abc import Callable, Sequence

from ..aggregates import view_text
from ..base import (
    AmbiguousSessionError,
    ChangeFeed,
    ImportReport,
    SearchHit,
    SessionNotFoundError,
    SessionSummary,
    StorageError,
    StoreChange,
)
from ..gc_policy import paused
from ..imports.records import ImportRecords, prepare_records
from ..json_types import Json, SessionHeader
from ..model import (
    Entry,
    InvalidEntryError,
    SessionInfoEntry,
    iso_to_ms,
    new_session_id,
    now_iso,
)
from ..model_lite import entry_json
from ..model_views import view_of_model as view_of_entry  # (a store of models: pydantic is loaded)
from ..tree.fork import forked_entries
from ..views import skeleton_of
from .entries import EntryIndex, view_of_raw
from .storage import IndexedSessionStorage


def new_header(session_id: str, cwd: str = "", **extra: Json) -> SessionHeader:
    """A v3 header in Pi's key order; extra keys with a None value are left out."""
    header: SessionHeader = {"type": "session", "version": 3, "id": session_id, "timestamp": now_iso(), "cwd": cwd}
    header.update({k: v for k, v in extra.items() if v is not None})
    return header


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
