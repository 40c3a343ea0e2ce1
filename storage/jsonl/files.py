"""A session file as the JSONL backend reads and writes it: `flock`ed with a bounded, announced
wait for another process's lock (locks.py), re-opened when another process replaced it meanwhile,
read whole, written whole; `FileState` is what this process has read of it.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import NamedTuple

from ..base import SessionFileError, write_error
from ..locks import POLL, LockWait
from ..special import NotRegularError, open_regular


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_all(fd: int, start: int = 0) -> bytes:
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


def file_state(st: os.stat_result, lines: int, ends_with_newline: bool) -> FileState:
    return FileState(st.st_ino, st.st_dev, st.st_size, lines, st.st_mtime_ns, ends_with_newline)


def flock_waiting(fd: int, kind: int, path: Path) -> None:
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


class Locked:
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
                flock_waiting(fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH, self.path)
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
