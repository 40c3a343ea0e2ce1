"""Reading a file to change it, and replacing it, safely (edit, write, and restoring checkpoints).

- Nothing but a regular file is read or replaced: a FIFO, socket or device is refused before it
  is opened (opening a FIFO blocks; writing a device writes the device), a directory is named.
- A file is replaced whole (`treechat.export.whole_file`: a file nobody sees, flushed, renamed
  over the old one): a crash, a kill -9 or a full disk leaves the old file or the new one, never
  half of each, and no temporary file; the old file's permissions are kept.
- The path written is the one the caller checked, exactly: its folder is opened one component at
  a time from the root, never through a link, and a folder on the way that became a link (or is
  one git takes for a repository's own, `git_dir`) is refused on the open folders themselves, so
  a swap between the caller's check and the write cannot move the write elsewhere.
- Reads are bounded (`limit` bytes); the callers say what they do above it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Literal

from treechat.export.whole_file import WholeFile

from .file_scan import NotRegular, open_regular, special_kind
from .git_dir import is_dot_git, is_repository_folder

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


def open_parent(path: str, *, make: bool = False, git_ok: bool = False) -> tuple[int, str]:
    """(a descriptor of the folder holding `path`, its name there). `path` is absolute and real
    (the caller resolved its links): see `open_exact_folder`; its name must not be `.git` either."""
    if not os.path.isabs(path) or os.path.normpath(path) != path or path == os.sep:
        raise FileProblem(errno.EINVAL, f"{path} is not an absolute, normalized path to a file; not written")
    folder, name = os.path.split(path)
    if not git_ok and is_dot_git(name):
        raise FileProblem(errno.EPERM, f"{path} is git's own; not written")
    return open_exact_folder(folder, make=make, git_ok=git_ok), name


def open_exact_folder(folder: str, *, make: bool = False, git_ok: bool = False) -> int:
    """A descriptor of the folder `folder` (absolute and real), opened from the root one folder at
    a time, never through a link; missing folders made with `make`. FileProblem when one on the
    way is a link or not a folder now, or (unless `git_ok`) a folder git takes for its own."""
    fd = os.open(os.sep, _FOLDER)
    try:
        for part in (p for p in folder.split(os.sep) if p):
            if not git_ok and is_dot_git(part):
                raise FileProblem(errno.EPERM, f"{folder} is in git's own folder; not written")
            nxt = _open_child(fd, part, make, folder)
            os.close(fd)
            fd = nxt
            if not git_ok and is_repository_folder(fd):
                raise FileProblem(errno.EPERM, f"{folder} is in git's own folder now; not written")
    except BaseException:
        os.close(fd)
        raise
    return fd


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def _open_child(fd: int, part: str, make: bool, path: str) -> int:
    try:
        return os.open(part, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
    except FileNotFoundError:
        if not make:
            raise
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise FileProblem(err.errno, f"a folder on the way to {path} is a symbolic link or a file now; "
                              "not written there") from None
        raise
    try:
        os.mkdir(part, 0o777, dir_fd=fd)
    except FileExistsError:
        pass
    return _open_child(fd, part, False, path)


def replace_file(path: str, data: bytes, *, make_parents: bool = False, git_ok: bool = False) -> None:
    """Put `data` at `path` (absolute and real: a link is followed by the caller, see
    `open_parent`) whole, or not at all; an existing file keeps its permission bits."""
    folder, name = open_parent(path, make=make_parents, git_ok=git_ok)
    try:
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            what = ("a directory" if stat.S_ISDIR(st.st_mode) else "a symbolic link" if stat.S_ISLNK(st.st_mode)
                    else special_kind(st.st_mode) or "not a regular file")
            raise FileProblem(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL, f"{path} is {what}; not written")
        out = WholeFile(folder, name, stat.S_IMODE(st.st_mode) if st is not None else None)
        try:
            out.write_all(data)
        except BaseException:
            out.discard()
            raise
        out.land()
    finally:
        os.close(folder)


def remove_file(path: str, *, git_ok: bool = False) -> None:
    """Remove a regular file (a restore to before it existed); anything else is refused."""
    try:
        folder, name = open_parent(path, git_ok=git_ok)
    except FileNotFoundError:
        return
    try:
        try:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(errno.EINVAL, f"{path} is not a regular file now; not removed")
        os.unlink(name, dir_fd=folder)
    finally:
        os.close(folder)


__all__ = ["FileProblem", "Target", "inspect", "open_exact_folder", "open_parent", "read_regular", "replace_file", "remove_file"]
