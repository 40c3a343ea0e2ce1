"""Files that are not regular files: a FIFO's open waits for a writer, a device's read may never
end (the zero device), so they are named and refused before they are read (issue 21)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device"}


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """"a FIFO", "a socket", "a … device" for what `path` reaches (through links), else None (a
    regular file, a folder, or nothing there)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return _KINDS.get(stat.S_IFMT(mode))


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """A descriptor for `path` opened without waiting (O_NONBLOCK: a FIFO's open would block) and
    checked to be a regular file; OSError(EINVAL) naming its kind otherwise."""
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = _KINDS.get(stat.S_IFMT(os.fstat(fd).st_mode))
        if kind is not None:
            raise NotRegularError(kind, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class NotRegularError(OSError):
    """`path` is a FIFO, a socket or a device: `kind` says which."""

    def __init__(self, kind: str, path: Path | str) -> None:
        super().__init__(22, f"{path} is {kind}, not a file")
        self.kind = kind


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (best effort: some file systems and
    platforms cannot open or sync a folder). Here, not in session_file, so the export's writer
    uses it without importing the storage's models."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
