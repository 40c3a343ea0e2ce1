"""JSONL backend: one Pi-compatible v3 file per session, one flushed line per appended entry.

The header is written when the session is created (Pi delays it until the first assistant
message and can then write it twice; we do not). Each append is a single `write` on an
O_APPEND descriptor, so a finished entry is in the kernel before `append_entry` returns and
survives a kill -9 of this process.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from .base import ImportReport, SessionFileError, SessionSummary
from .index import EntryIndex, gc_paused
from .indexed import IndexedCatalog, IndexedSessionStorage
from .jsonl_format import (
    file_lines,
    read_session_file,
    scan_session_file,
    write_atomic,
    write_session_file,
)

__all__ = [
    "JsonlCatalog",
    "JsonlSessionStorage",
    "read_session_file",
    "write_session_file",
    "session_file_name",
]


def session_file_name(header: dict[str, Any]) -> str:
    """`<ISO timestamp with ':' and '.' replaced by '-'>_<sessionId>.jsonl`, as Pi names them."""
    stamp = str(header.get("timestamp", "")).replace(":", "-").replace(".", "-")
    return f"{stamp}_{header['id']}.jsonl"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class JsonlSessionStorage(IndexedSessionStorage):
    """A session backed by one file. `load_report` tells what opening it had to skip."""

    def __init__(
        self,
        header: dict[str, Any],
        path: Path,
        index: EntryIndex | None = None,
        load_report: ImportReport | None = None,
        ends_with_newline: bool = True,
    ):
        super().__init__(header, index, path)
        self.load_report = load_report or ImportReport(session_id=header["id"])
        # A v1/v2 file is migrated in memory only; it is rewritten (atomically) at the first write.
        self._needs_rewrite = self.load_report.migrated_from is not None
        self._ends_with_newline = ends_with_newline

    def _persist(self, lines: list[str]) -> None:
        assert self.path is not None
        if self._needs_rewrite:
            write_atomic(self.path, file_lines(self.header, self.index.raw_lines() + list(lines)))
            self._needs_rewrite = False
            self._ends_with_newline = True
            return
        data = "\n".join(lines).encode() + b"\n"
        if not self._ends_with_newline:
            data = b"\n" + data  # a torn last line (killed mid-write) must not swallow ours
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            raise SessionFileError(f"Session file {self.path} was removed; the entry was not saved") from None
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        self._ends_with_newline = True


class JsonlCatalog(IndexedCatalog):
    """All `*.jsonl` sessions of one directory (created on first write)."""

    def __init__(self, directory: Path | str):
        super().__init__()
        self.directory = Path(directory)
        self._summary_cache: dict[Path, tuple[tuple[int, int], SessionSummary]] = {}

    def _paths(self) -> dict[str, Path]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return {}
        paths: dict[str, Path] = {}
        for name in names:
            if name.endswith(".jsonl") and "_" in name and not name.startswith("."):
                paths[name[: -len(".jsonl")].split("_", 1)[1]] = self.directory / name
        return paths

    def _ids(self) -> list[str]:
        return list(self._paths())

    def _load(self, session_id: str) -> JsonlSessionStorage:
        path = self._paths()[session_id]
        with gc_paused():
            scanned = scan_session_file(path)
            index = EntryIndex()
            for entry, raw in zip(scanned.entries, scanned.raws):
                index.add(entry, raw)
        header = {**scanned.header, "id": session_id}
        return JsonlSessionStorage(header, path, index, scanned.report, scanned.ends_with_newline)

    def _make(self, header: dict[str, Any]) -> JsonlSessionStorage:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / session_file_name(header)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise SessionFileError(f"Session file {path} already exists") from None
        try:
            _write_all(fd, file_lines(header, []))
        finally:
            os.close(fd)
        return JsonlSessionStorage(header, path)

    def _remove(self, session_id: str) -> None:
        path = self._paths()[session_id]
        try:
            path.unlink()
        except OSError as err:
            if err.errno != errno.ENOENT:
                raise SessionFileError(f"Session file {path} cannot be deleted: {err.strerror}") from None

    def _summaries(self) -> list[SessionSummary]:
        rows = []
        for session_id, path in self._paths().items():
            storage = self._open.get(session_id)
            if storage is not None:
                rows.append(storage.summary())
                continue
            try:
                st = path.stat()
                key = (st.st_mtime_ns, st.st_size)
                cached = self._summary_cache.get(path)
                if cached is None or cached[0] != key:
                    cached = (key, self._load(session_id).summary())
                    self._summary_cache[path] = cached
            except (OSError, SessionFileError):
                continue  # like Pi's list: a file that cannot be read is not a session
            rows.append(cached[1])
        return rows

    async def open(self, session_ref: str) -> JsonlSessionStorage:  # type: ignore[override]
        return await super().open(session_ref)  # type: ignore[return-value]
