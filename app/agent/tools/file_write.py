"""Reading a file to change it, and replacing it, safely (edit, write, and restoring checkpoints).

- Nothing but a regular file is read or replaced: a FIFO, socket or device is refused before it
  is opened (opening a FIFO blocks; writing a device writes the device), a directory is named.
- A file is replaced whole: the new bytes go to a new file beside it (created exclusively, never
  through a link), are flushed to disk, then renamed over the old one. A crash or a full disk
  leaves the old file or the new one, never half of each; the old file's permissions are kept.
  Through a link the file it points to is replaced (the caller has checked where that is).
- Reads are bounded (`limit` bytes); the callers say what they do above it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Literal

from .file_scan import NotRegular, open_regular, special_kind

Kind = Literal["file", "missing", "directory", "special"]


class FileProblem(OSError):
    """Why a file cannot be read or written as asked; the text names the file."""


@dataclass(frozen=True)
class Target:
    """What is at a path now (links followed)."""

    kind: Kind
    size: int = 0
    special: str = ""  # "a FIFO", "a socket", … for kind "special"
    mode: int | None = None  # permission bits of an existing file


def inspect(path: str) -> Target:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Target("missing")
    except NotADirectoryError:
        return Target("missing")  # a parent is a file: writing says so
    if stat.S_ISDIR(st.st_mode):
        return Target("directory")
    kind = special_kind(st.st_mode)
    if kind or not stat.S_ISREG(st.st_mode):
        return Target("special", special=kind or "not a regular file")
    return Target("file", st.st_size, mode=stat.S_IMODE(st.st_mode))


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of a regular file, at most `limit` + 1 (the caller tells "too large" by length)."""
    try:
        fd = open_regular(path)
    except NotRegular as err:
        raise FileProblem(errno.EINVAL, f"{path} is {err.kind}") from None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit + 1)


def replace_file(path: str, data: bytes, *, mode: int | None = None, make_parents: bool = False) -> None:
    """Put `data` at `path` (its real path: a link is followed by the caller) whole, or not at all.
    `mode`: the permission bits to keep (None: a new file's, from the umask)."""
    folder = os.path.dirname(path) or "."
    if make_parents:
        os.makedirs(folder, exist_ok=True)
    now = inspect(path)
    if now.kind == "directory":
        raise FileProblem(errno.EISDIR, f"{path} is a directory")
    if now.kind == "special":
        raise FileProblem(errno.EINVAL, f"{path} is {now.special}; not written")
    if mode is None and now.kind == "file":
        mode = now.mode
    temp = _temp_beside(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def remove_file(path: str) -> None:
    """Remove a regular file (a restore to before it existed); anything else is refused."""
    now = inspect(path)
    if now.kind == "missing":
        return
    if now.kind != "file":
        raise FileProblem(errno.EINVAL, f"{path} is {now.special or 'a directory'}; not removed")
    os.unlink(path)


def _temp_beside(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.treechat-{os.getpid()}-{os.urandom(4).hex()}.tmp")


__all__ = ["FileProblem", "Target", "inspect", "read_regular", "replace_file", "remove_file"]
