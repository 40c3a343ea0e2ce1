"""A file replaced whole or not at all, in a folder held open by descriptor: how treechat writes
every file it replaces (an export; edit, write and restores in the user's folder; its own files in
the home).

The new bytes go to a file nobody can see (Linux's O_TMPFILE) in the target's folder. At the end
they are flushed to disk, the file gets a name tagged with this process's id
(`.NAME.treechat-PID-XXXXXXXX.tmp`) and that name is renamed over the target, so a reader sees the
old file or the new one, never half of each. Where there is no O_TMPFILE the file has that name
from the start.

Killed with -9, a writer leaves nothing while it writes (an unnamed file is freed with its
process); a named file stays only if it was killed between naming and renaming (or all along
without O_TMPFILE), and `sweep` removes it once that process is gone: the next write of the same
name does, and so does a restore looking at the file. Why a pid and not an age: a live writer's
file is never taken, however slow its disk, and a dead one's goes at once.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Collection

TAG = ".treechat-"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def temp_name(name: str) -> str:
    """The pid-tagged name of a new content of `name` (random too: two threads may write one name)."""
    return f".{name}{TAG}{os.getpid()}-{os.urandom(4).hex()}.tmp"


def _owner(temp: str, names: Collection[str]) -> int | None:
    """The process id a temporary file of one of `names` is tagged with (None: not one of ours)."""
    if not (temp.startswith(".") and temp.endswith(".tmp")) or TAG not in temp:
        return None
    name, _, tag = temp[1:-len(".tmp")].rpartition(TAG)
    pid = tag.split("-", 1)[0]
    return int(pid) if name in names and pid.isdigit() else None


def sweep(folder_fd: int, names: Collection[str]) -> list[str]:
    """Remove the temporary files of `names` in the folder `folder_fd` whose process is gone (killed
    mid-write); their names. Best effort: one that cannot be removed stays for the next sweep."""
    try:
        found = os.listdir(folder_fd)
    except OSError:
        return []
    removed = []
    for temp in found:
        pid = _owner(temp, names)
        if pid is None or _alive(pid):
            continue
        try:
            os.unlink(temp, dir_fd=folder_fd)
            removed.append(temp)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of ours may be writing it (a leftover of a reused pid waits for the next process)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def hidden_file(folder_fd: int, mode: int) -> int | None:
    """An O_TMPFILE in the folder (no name until `WholeFile.land` gives it one); None where the
    system or the file system has none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | _CLOEXEC, mode, dir_fd=folder_fd)
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


class WholeFile:
    """A new content of `name` in the folder `folder_fd` (borrowed: the caller keeps it open until
    `land` or `discard`). Write to `fd`; `land` puts it in place, `discard` leaves the target as it
    was. `mode`: the permission bits it gets (None: a new file's, from the umask)."""

    def __init__(self, folder_fd: int, name: str, mode: int | None = None) -> None:
        self.folder_fd, self.name, self.mode = folder_fd, name, mode
        sweep(folder_fd, (name,))
        create = 0o666 if mode is None else 0o600  # (the umask applies to the first; the second is chmod-ed at the end)
        fd = hidden_file(folder_fd, create)
        self.temp: str | None = None
        if fd is None:
            self.temp = temp_name(name)
            fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, create,
                         dir_fd=folder_fd)
        self.fd = fd
        self._open = True

    def write_all(self, data: bytes) -> None:
        view, done = memoryview(data), 0
        while done < len(view):
            done += os.write(self.fd, view[done:])

    def land(self) -> None:
        """Flush, name (an unnamed file), rename over the target; on failure nothing is left behind."""
        try:
            os.fsync(self.fd)
            if self.mode is not None:
                os.fchmod(self.fd, self.mode)
            if self.temp is None:
                temp = temp_name(self.name)
                os.link(f"/proc/self/fd/{self.fd}", temp, dst_dir_fd=self.folder_fd, follow_symlinks=True)
                self.temp = temp
            self._close()
            os.replace(self.temp, self.name, src_dir_fd=self.folder_fd, dst_dir_fd=self.folder_fd)
            self.temp = None
        except BaseException:
            self.discard()
            raise
        try:
            os.fsync(self.folder_fd)
        except OSError:
            pass  # some file systems cannot sync a folder: the rename is still whole

    def discard(self) -> None:
        self._close()
        if self.temp is not None:
            try:
                os.unlink(self.temp, dir_fd=self.folder_fd)
            except OSError:
                pass
            self.temp = None

    def _close(self) -> None:
        if self._open:
            self._open = False
            os.close(self.fd)


def open_folder(path: str | os.PathLike[str]) -> int:
    """A descriptor of the folder `path` (links followed: for a place the person named)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """One of treechat's own files in the home, replaced whole, readable by its owner only (its
    folder made 0700 when missing)."""
    folder, name = os.path.split(os.fspath(path))
    os.makedirs(folder or ".", mode=0o700, exist_ok=True)
    fd = open_folder(folder or ".")
    try:
        out = WholeFile(fd, name, 0o600)
        try:
            out.write_all(data)
        except BaseException:
            out.discard()
            raise
        out.land()
    finally:
        os.close(fd)


__all__ = ["WholeFile", "hidden_file", "open_folder", "sweep", "temp_name", "write_private"]
