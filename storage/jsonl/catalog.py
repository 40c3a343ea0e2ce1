"""`JsonlCatalog`: the sessions of one folder, a Pi-compatible v3 file each, named as Pi names
them. Lists come from a summary cache (summaries.py), what other processes write from the files'
sizes (feed.py); a writer killed mid-write leaves a temporary file that is swept once stale.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from ..base import (
    SessionFileError,
    SessionSummary,
    StorageError,
    write_error,
)
from ..imports.records import ImportRecords
from ..indexed.catalog import IndexedCatalog, index_of
from ..indexed.entries import EntryIndex
from ..json_types import SessionHeader
from ..session_file import (
    FILE_MODE,
    ensure_dir,
    file_lines,
    scan_bytes,
    write_atomic,
)
from .feed import JsonlChangeFeed
from .files import Locked, file_state, read_all, write_all
from .storage import JsonlSessionStorage
from .summaries import SummaryCache, file_key, summary_from


def session_file_name(header: SessionHeader) -> str:
    """`<ISO timestamp with ':' and '.' replaced by '-'>_<sessionId>.jsonl`, as Pi names them."""
    stamp = str(header.get("timestamp", "")).replace(":", "-").replace(".", "-")
    return f"{stamp}_{header['id']}.jsonl"


STALE_TEMP_S = 600.0


def sweep_stale_temps(directory: Path, names: list[str]) -> None:
    """Remove the temporary files (`.NAME.xxxx.tmp`, see write_atomic) a writer killed mid-write
    left behind: untouched for STALE_TEMP_S, so no live writer (which writes continuously and
    renames within seconds) owns them. Best effort: a file that cannot be removed stays."""
    now = time.time()
    for name in names:
        if name.startswith(".") and name.endswith(".tmp"):
            path = directory / name
            try:
                if now - path.stat().st_mtime > STALE_TEMP_S:
                    path.unlink()
            except OSError:
                pass


class JsonlCatalog(IndexedCatalog):
    """All `*.jsonl` sessions of one directory (created on first write, 0700; files 0600)."""

    def __init__(self, directory: Path | str):
        super().__init__()
        self.directory = Path(directory)
        self.cache = SummaryCache(self.directory)
        self.problems: list[str] = []  # files `list` had to pass over, with the reason
        self._swept = False  # stale temporary files removed (once per catalog)

    @property
    def read_only(self) -> str | None:
        folder = self.directory if self.directory.exists() else self.directory.parent
        if folder.exists() and not os.access(folder, os.W_OK):
            return f"the sessions folder {folder} is not writable"
        return None

    def _paths(self) -> dict[str, Path]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return {}
        except OSError as err:
            raise SessionFileError(f"Sessions folder {self.directory} cannot be read: {err.strerror}") from None
        if not self._swept:
            self._swept = True
            sweep_stale_temps(self.directory, names)
        paths: dict[str, Path] = {}
        for name in sorted(names):
            if name.endswith(".jsonl") and "_" in name and not name.startswith("."):
                paths[name[: -len(".jsonl")].split("_", 1)[1]] = self.directory / name
        return paths

    def _ids(self) -> list[str]:
        return list(self._paths())

    def _load(self, session_id: str) -> JsonlSessionStorage:
        path = self._paths()[session_id]
        try:
            with Locked(path, exclusive=False) as (fd, st):
                data = read_all(fd)
        except MemoryError:
            raise SessionFileError(f"Session file {path} is too large to open") from None
        scanned = scan_bytes(data, path)
        index = EntryIndex()
        index.load(scanned.skels, scanned.raws, scanned.lines, scanned.positions)
        record = self.cache.get(path.name, file_key(st))
        if record is not None:
            try:
                summary, stats, modified = summary_from(record)
                index.seed(stats, summary.first_message, modified)
            except (TypeError, ValueError, KeyError):
                pass
        header = {**scanned.header, "id": session_id}
        state = file_state(st, scanned.line_count, scanned.ends_with_newline)
        return JsonlSessionStorage(header, path, index, scanned.report, state)

    def _make(self, header: SessionHeader) -> JsonlSessionStorage:
        path = self.directory / session_file_name(header)
        data = file_lines(header, [])
        try:
            ensure_dir(self.directory, private=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            raise SessionFileError(f"Session file {path} already exists") from None
        except OSError as err:
            raise write_error(err, f"session file {path}") from None
        try:
            write_all(fd, data)
            st = os.fstat(fd)
        except OSError as err:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise write_error(err, f"session file {path}") from None
        os.close(fd)
        return JsonlSessionStorage(header, path, state=file_state(st, 1, True))

    def _store(self, header: SessionHeader, records: ImportRecords, replace: bool) -> JsonlSessionStorage:
        old = self._paths().get(header["id"]) if replace else None
        path = self.directory / session_file_name(header)
        data = file_lines(header, records.raws)
        try:
            write_atomic(path, data)  # all or nothing: a killed import leaves no partial session
        except OSError as err:
            raise write_error(err, f"session file {path}") from None
        if old is not None and old != path:
            old.unlink(missing_ok=True)
        index = index_of(records)
        storage = JsonlSessionStorage(header, path, index, state=file_state(os.stat(path), data.count(b"\n"), True))
        self._remember(storage)
        return storage

    def _remember(self, storage: JsonlSessionStorage) -> None:
        """Put an open session's summary in the cache when the file is exactly what it has read."""
        s = storage.file_state
        try:
            st = os.stat(storage.file)
        except OSError:
            return
        if s is None or (st.st_ino, st.st_size, st.st_mtime_ns) != (s.ino, s.size, s.mtime_ns):
            return
        idx = storage.index
        self.cache.put(storage.file.name, file_key(st), storage.summary(), idx.stats, idx.modified_ms)

    def _remove(self, session_id: str) -> None:
        path = self._paths()[session_id]
        try:
            path.unlink()
        except OSError as err:
            if err.errno != errno.ENOENT:
                raise write_error(err, f"session file {path}") from None

    def _summaries(self) -> list[SessionSummary]:
        rows = []
        self.problems = []
        paths = self._paths()
        for session_id, path in paths.items():
            storage = self._open.get(session_id)
            if isinstance(storage, JsonlSessionStorage):
                rows.append(storage.summary())
                self._remember(storage)
                continue
            try:
                st = path.stat()
                record = self.cache.get(path.name, file_key(st))
                if record is not None:
                    rows.append(summary_from(record)[0])
                    continue
            except (OSError, TypeError, ValueError, KeyError):
                pass
            try:
                self._reading(len(rows), len(paths))
                loaded = self._load(session_id)
                rows.append(loaded.summary())
                self._remember(loaded)
            except Exception as err:  # noqa: BLE001 - whatever one file holds, the others are listed
                # like Pi's list: a file that cannot be read is not a session (it is reported)
                self.problems.append(f"{path.name}: {err if isinstance(err, (OSError, StorageError, ValueError)) else repr(err)}")
                continue
        self.cache.forget_missing({p.name for p in paths.values()})
        self.cache.save()
        return rows

    async def open(self, session_ref: str) -> JsonlSessionStorage:
        storage = await super().open(session_ref)
        assert isinstance(storage, JsonlSessionStorage)
        return storage

    def watch(self) -> JsonlChangeFeed:
        return JsonlChangeFeed(self.directory)

    async def close(self) -> None:
        for storage in self._open.values():
            if isinstance(storage, JsonlSessionStorage):
                self._remember(storage)
        self.cache.save()
        await super().close()
