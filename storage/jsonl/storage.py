"""`JsonlSessionStorage`: one session as one Pi-compatible v3 file, one line per appended entry.

Opening reads the file once and decodes only each line's skeleton (indexed/entries.py); entries
are validated when read.

Several processes may hold one session (the app and `treechat -p`, two print runs):
* every write takes an exclusive `flock` on the file, first folds in whatever other processes
  appended since this one last looked (by size), then appends its line with one `write` on an
  O_APPEND descriptor — in the kernel before `append_entry` returns, so it survives kill -9;
* a file replaced while we waited for the lock (another process migrated it) is re-locked and
  re-read; a v1/v2 file is migrated only under the lock, after re-reading it, by writing a new
  file, fsync and rename — never from a copy that may be stale. v1 ids are deterministic
  (session_file.migration_id), so every process agrees on them;
* `poll_appended` (one stat when nothing changed) folds in other writers' entries without
  moving this process's leaf.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

from ..base import (
    AppendedEntries,
    DuplicateEntryError,
    ImportReport,
    SessionFileError,
    StorageError,
    write_error,
)
from ..indexed.entries import EntryIndex
from ..indexed.storage import IndexedSessionStorage
from ..json_types import SessionHeader
from ..locks import POLL, LockWait
from ..model import Entry
from ..session_file import (
    ScannedFile,
    file_lines,
    scan_bytes,
    scan_lines,
    write_atomic,
)
from ..special import open_regular
from ..views import decode_skeleton
from .files import FileState, Locked, file_state, read_all, write_all


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
        self.file_state = state
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
        s = self.file_state
        if s is None or (st.st_ino, st.st_dev) != (s.ino, s.dev) or st.st_size < s.size:
            self._reload(fd, st)
        elif self._needs_rewrite and st.st_size != s.size:
            self._reload(fd, st)
        elif st.st_size > s.size:
            data = read_all(fd, s.size)
            scanned = ScannedFile(header=self.header, report=self._load_report)
            scan_lines(scanned, data, s.lines + 1, seen=set())
            for skel, raw, line in zip(scanned.skels, scanned.raws, scanned.lines):
                if skel.id in self.index:
                    self._load_report.duplicate_ids += 1
                    continue
                self._unpolled.append(len(self.index))
                self.index.add(skel, raw, line, move_leaf=False)
            self.file_state = file_state(st, s.lines + data.count(b"\n"), data.endswith(b"\n"))
        elif st.st_mtime_ns != s.mtime_ns:
            self.file_state = s._replace(mtime_ns=st.st_mtime_ns)

    def _reload(self, fd: int, st: os.stat_result) -> None:
        """Another process replaced or rewrote the file: read it again, keep our leaf."""
        data = read_all(fd)
        scanned = scan_bytes(data, self.file)
        old, index = self.index, EntryIndex()
        index.load(scanned.skels, scanned.raws, scanned.lines, scanned.positions)
        self._unpolled = [p for p, s in enumerate(scanned.skels) if s.id not in old]
        if old.leaf_id is not None and old.leaf_id in index:
            index.leaf_id = old.leaf_id
        self.index = index
        self.load_report = scanned.report
        self._needs_rewrite = scanned.migrated
        self.file_state = file_state(st, scanned.line_count, scanned.ends_with_newline)

    def refresh(self) -> None:
        """Fold in what other processes wrote, if the file changed (one stat when it did not)."""
        try:
            st = os.stat(self.file)
        except OSError:
            return
        s = self.file_state
        if s is None or (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) != (s.ino, s.dev, s.size, s.mtime_ns):
            try:
                with Locked(self.file, exclusive=False) as (fd, locked):
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
        `flock_waiting` as before."""
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
        with Locked(self.file, exclusive=True) as (fd, st):
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
                self.file_state = file_state(os.stat(self.file), data.count(b"\n"), True)
                return
            assert self.file_state is not None
            data = "\n".join(lines).encode() + b"\n"
            if not self.file_state.ends_with_newline:
                data = b"\n" + data  # a torn last line (killed mid-write) must not swallow ours
            try:
                write_all(fd, data)
            except OSError as err:
                try:
                    os.ftruncate(fd, st.st_size)  # leave no torn line behind (disk full)
                except OSError:
                    pass
                raise write_error(err, f"session file {self.file}") from None
            self.file_state = file_state(os.fstat(fd), self.file_state.lines + data.count(b"\n"), True)
