"""JSONL backend: one Pi-compatible v3 file per session, one line per appended entry.

Opening reads the file once and decodes only each line's skeleton (see index.py); entries are
validated when read. The catalog lists sessions from a summary cache (jsonl_cache.py).

Several processes may hold one session (the app and `treechat -p`, two print runs):
* every write takes an exclusive `flock` on the file, first folds in whatever other processes
  appended since this one last looked (by size), then appends its line with one `write` on an
  O_APPEND descriptor — in the kernel before `append_entry` returns, so it survives kill -9;
* a file replaced while we waited for the lock (another process migrated it) is re-locked and
  re-read; a v1/v2 file is migrated only under the lock, after re-reading it, by writing a new
  file, fsync and rename — never from a copy that may be stale. v1 ids are deterministic
  (jsonl_format.migration_id), so every process agrees on them;
* `poll_appended` (one stat when nothing changed) folds in other writers' entries without
  moving this process's leaf.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import NamedTuple

from .base import (
    AppendedEntries,
    DuplicateEntryError,
    ImportReport,
    SessionFileError,
    SessionSummary,
    StorageError,
    write_error,
)
from .imports import ImportRecords
from .index import EntryIndex
from .indexed import IndexedCatalog, IndexedSessionStorage, index_of
from .json_types import SessionHeader
from .jsonl_cache import SummaryCache, file_key, summary_from
from .jsonl_feed import JsonlChangeFeed
from .jsonl_format import (
    FILE_MODE,
    ScannedFile,
    ensure_dir,
    file_lines,
    read_session_file,
    scan_bytes,
    scan_lines,
    write_atomic,
    write_session_file,
)
from .locks import POLL, LockWait
from .model import Entry
from .special import NotRegularError, open_regular
from .views import decode_skeleton

__all__ = [
    "JsonlCatalog",
    "JsonlSessionStorage",
    "read_session_file",
    "write_session_file",
    "session_file_name",
]


def session_file_name(header: SessionHeader) -> str:
    """`<ISO timestamp with ':' and '.' replaced by '-'>_<sessionId>.jsonl`, as Pi names them."""
    stamp = str(header.get("timestamp", "")).replace(":", "-").replace(".", "-")
    return f"{stamp}_{header['id']}.jsonl"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int, start: int = 0) -> bytes:
    chunks: list[bytes] = []
    offset = start
    while True:
        chunk = os.pread(fd, max(1 << 20, os.fstat(fd).st_size - offset), offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


class FileState(NamedTuple):
    """What this process has read of its file: identity, bytes consumed, lines, mtime."""

    ino: int
    dev: int
    size: int
    lines: int
    mtime_ns: int
    ends_with_newline: bool


def _state(st: os.stat_result, lines: int, ends_with_newline: bool) -> FileState:
    return FileState(st.st_ino, st.st_dev, st.st_size, lines, st.st_mtime_ns, ends_with_newline)


def _flock(fd: int, kind: int, path: Path) -> None:
    """flock, waiting for another process's lock as locks.LockWait says: bounded, and said."""
    wait: LockWait | None = None
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            wait = wait or LockWait(path)
            wait.busy()
            time.sleep(POLL)


class _Locked:
    """The session file opened and flock'ed; re-opened if another process replaced it meanwhile."""

    def __init__(self, path: Path, exclusive: bool):
        self.path, self.exclusive = path, exclusive
        self.fd = -1

    def __enter__(self) -> tuple[int, os.stat_result]:
        flags = os.O_RDWR | os.O_APPEND if self.exclusive else os.O_RDONLY
        while True:
            try:
                fd = open_regular(self.path, flags)  # a FIFO or a device named *.jsonl: refused, not read
            except FileNotFoundError:
                raise SessionFileError(f"Session file {self.path} was removed") from None
            except NotRegularError as err:
                raise SessionFileError(f"Session file {self.path} is {err.kind}, not a file; not read") from None
            except OSError as err:
                if self.exclusive:
                    raise write_error(err, f"session file {self.path}") from None
                raise SessionFileError(f"Session file {self.path} cannot be read: {err.strerror}") from None
            try:
                _flock(fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH, self.path)
                st = os.fstat(fd)
                try:
                    current = os.stat(self.path)
                except FileNotFoundError:
                    current = None
            except BaseException:
                os.close(fd)
                raise
            if current is not None and (current.st_ino, current.st_dev) == (st.st_ino, st.st_dev):
                self.fd = fd
                return fd, st
            os.close(fd)  # renamed over while we waited: lock the file that is there now

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)  # closing releases the lock


class JsonlSessionStorage(IndexedSessionStorage):
    """A session backed by one file. `load_report` tells what opening it had to skip."""

    LEAF_IS_LAST_LINE = True

    def __init__(
        self,
        header: SessionHeader,
        path: Path,
        index: EntryIndex | None = None,
        load_report: ImportReport | None = None,
        state: FileState | None = None,
    ):
        super().__init__(header, index, path)
        self.file: Path = path
        self._load_report = load_report or ImportReport(session_id=header["id"])
        # A v1/v2 file is migrated in memory only; it is rewritten (atomically) at the first write.
        self._needs_rewrite = self.load_report.migrated_from is not None
        self._state = state
        self._unpolled: list[int] = []  # positions of entries other writers appended

    @property
    def load_report(self) -> ImportReport:
        """What reading this file had to skip: lines refused at open, and entries whose body
        turned out invalid when they were read (opening validates only the tree fields)."""
        r = self._load_report
        late, index = self.index.dead, self.index
        if not late and not index.problems and not index.repaired:
            return r
        problems = (r.problems + index.problems)[:5]
        return ImportReport(r.session_id, r.entries - late, r.skipped_lines + late, r.duplicate_ids, r.migrated_from,
                            r.repaired + index.repaired, problems)

    @load_report.setter
    def load_report(self, report: ImportReport) -> None:
        self._load_report = report

    # ------------------------------------------------------------ reading what others wrote

    def _sync(self, fd: int, st: os.stat_result) -> None:
        """Bring the index up to date with the (locked) file."""
        s = self._state
        if s is None or (st.st_ino, st.st_dev) != (s.ino, s.dev) or st.st_size < s.size:
            self._reload(fd, st)
        elif self._needs_rewrite and st.st_size != s.size:
            self._reload(fd, st)
        elif st.st_size > s.size:
            data = _read_all(fd, s.size)
            scanned = ScannedFile(header=self.header, report=self._load_report)
            scan_lines(scanned, data, s.lines + 1, seen=set())
            for skel, raw, line in zip(scanned.skels, scanned.raws, scanned.lines):
                if skel.id in self.index:
                    self._load_report.duplicate_ids += 1
                    continue
                self._unpolled.append(len(self.index))
                self.index.add(skel, raw, line, move_leaf=False)
            self._state = _state(st, s.lines + data.count(b"\n"), data.endswith(b"\n"))
        elif st.st_mtime_ns != s.mtime_ns:
            self._state = s._replace(mtime_ns=st.st_mtime_ns)

    def _reload(self, fd: int, st: os.stat_result) -> None:
        """Another process replaced or rewrote the file: read it again, keep our leaf."""
        data = _read_all(fd)
        scanned = scan_bytes(data, self.file)
        old, index = self.index, EntryIndex()
        index.load(scanned.skels, scanned.raws, scanned.lines, scanned.positions)
        self._unpolled = [p for p, s in enumerate(scanned.skels) if s.id not in old]
        if old.leaf_id is not None and old.leaf_id in index:
            index.leaf_id = old.leaf_id
        self.index = index
        self.load_report = scanned.report
        self._needs_rewrite = scanned.migrated
        self._state = _state(st, scanned.line_count, scanned.ends_with_newline)

    def refresh(self) -> None:
        """Fold in what other processes wrote, if the file changed (one stat when it did not)."""
        try:
            st = os.stat(self.file)
        except OSError:
            return
        s = self._state
        if s is None or (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) != (s.ino, s.dev, s.size, s.mtime_ns):
            try:
                with _Locked(self.file, exclusive=False) as (fd, locked):
                    self._sync(fd, locked)
            except SessionFileError:
                return  # removed or unreadable meanwhile: what was read stays readable

    async def poll_appended(self) -> AppendedEntries:
        self.refresh()
        if not self._unpolled:
            return AppendedEntries()
        positions, self._unpolled = self._unpolled, []
        entries = self.index.fresh_at(positions)
        rows = self.index.rows_at([p for p in positions if self.index.skeleton_at(p).type != "leaf"])
        return AppendedEntries(entries, rows)

    # ------------------------------------------------------------ writing

    async def append_entry(self, entry: Entry, *, move_leaf: bool = True) -> None:
        await self._lock_free()
        await super().append_entry(entry, move_leaf=move_leaf)

    async def set_leaf_id(self, leaf_id: str | None) -> None:
        await self._lock_free()
        await super().set_leaf_id(leaf_id)

    async def close(self) -> None:
        """The person's leaf goes back on the last line if a run's append took it (base.py's
        contract); a file that cannot take it any more keeps what it has (nothing is lost)."""
        if self.leaf_behind and not self.closed:
            try:
                await self.set_leaf_id(self.index.leaf_id)
            except (StorageError, OSError):
                pass
        await super().close()

    async def _lock_free(self) -> None:
        """Wait until no other process holds the file's lock, on the event loop's clock: a wait
        for another writer (bounded by lock_timeout and announced, as LockWait says) never freezes
        the app. The write then takes the lock at once; one that loses a race for it waits in
        `_flock` as before."""
        wait: LockWait | None = None
        while True:
            try:
                fd = open_regular(self.file, os.O_RDONLY)
            except OSError:
                return  # gone, or not a file: the write itself says so
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            finally:
                os.close(fd)  # closing lets our look at the lock go
            wait = wait or LockWait(self.file)
            wait.busy()
            await asyncio.sleep(POLL)

    def _persist(self, lines: list[str]) -> None:
        with _Locked(self.file, exclusive=True) as (fd, st):
            self._sync(fd, st)
            for line in lines:
                entry_id = decode_skeleton(line).id
                if entry_id in self.index:
                    raise DuplicateEntryError(entry_id)  # another process took the id meanwhile
            if self._needs_rewrite:
                # Migration: written from what was just re-read under the lock, atomically.
                data = file_lines(self.header, self.index.raw_lines() + list(lines))
                try:
                    write_atomic(self.file, data)
                except OSError as err:
                    raise write_error(err, f"session file {self.file}") from None
                self._needs_rewrite = False
                self._state = _state(os.stat(self.file), data.count(b"\n"), True)
                return
            assert self._state is not None
            data = "\n".join(lines).encode() + b"\n"
            if not self._state.ends_with_newline:
                data = b"\n" + data  # a torn last line (killed mid-write) must not swallow ours
            try:
                _write_all(fd, data)
            except OSError as err:
                try:
                    os.ftruncate(fd, st.st_size)  # leave no torn line behind (disk full)
                except OSError:
                    pass
                raise write_error(err, f"session file {self.file}") from None
            self._state = _state(os.fstat(fd), self._state.lines + data.count(b"\n"), True)


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
            with _Locked(path, exclusive=False) as (fd, st):
                data = _read_all(fd)
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
        state = _state(st, scanned.line_count, scanned.ends_with_newline)
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
            _write_all(fd, data)
            st = os.fstat(fd)
        except OSError as err:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise write_error(err, f"session file {path}") from None
        os.close(fd)
        return JsonlSessionStorage(header, path, state=_state(st, 1, True))

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
        storage = JsonlSessionStorage(header, path, index, state=_state(os.stat(path), data.count(b"\n"), True))
        self._remember(storage)
        return storage

    def _remember(self, storage: JsonlSessionStorage) -> None:
        """Put an open session's summary in the cache when the file is exactly what it has read."""
        s = storage._state
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
