"""The in-memory backend: an `IndexedCatalog` whose sessions live in a dict, their lines written nowhere."""

from __future__ import annotations

from ..imports.records import ImportRecords
from ..indexed.catalog import IndexedCatalog, index_of
from ..indexed.storage import IndexedSessionStorage
from ..json_types import SessionHeader


class MemorySessionStorage(IndexedSessionStorage):
    """A session whose entries live only in this process."""


class MemoryCatalog(IndexedCatalog):
    """Sessions kept in a dict; every open of the same id returns the same storage."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, MemorySessionStorage] = {}

    def _ids(self) -> list[str]:
        return list(self._sessions)

    def _load(self, session_id: str) -> MemorySessionStorage:
        return self._sessions[session_id]

    def _make(self, header: SessionHeader) -> MemorySessionStorage:
        storage = self._sessions[header["id"]] = MemorySessionStorage(header)
        return storage

    def _store(self, header: SessionHeader, records: ImportRecords, replace: bool) -> MemorySessionStorage:
        storage = self._sessions[header["id"]] = MemorySessionStorage(header, index_of(records))
        return storage

    def _remove(self, session_id: str) -> None:
        del self._sessions[session_id]

    async def close(self) -> None:
        # Closing forgets nothing: an in-memory store lives as long as the catalog object.
        for storage in self._sessions.values():
            await storage.close()
