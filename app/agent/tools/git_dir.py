"""Git's own folders, where a model's edit and write and a restore never write (issue 36): git runs
commands named there by itself (`core.fsmonitor` in `config` on the next `git status`, hooks,
filters, aliases), so a file written there is code that runs as the user.

A path is in git's machinery when
- one of its components is `.git` as a file system may read it: in any case (case-insensitive file
  systems), with the code points HFS+ ignores taken out, with the dots and spaces NTFS drops from a
  name's end, or as NTFS's short name `GIT~1` (git refuses the same names in a tree);
- one of the folders on it is one git takes for a repository's folder, whatever its name: a `HEAD`
  naming a ref or an object, with `objects/` and `refs/` (or a `commondir`) beside it — a bare
  repository, a `--separate-git-dir`, a worktree's or a submodule's folder;
- it is in the folder that a `.git` file (a worktree's or a submodule's `gitdir: PATH`) in one of
  the folders on its way points to, or in that folder's `commondir`.

Nor is a `HEAD` git would accept written anywhere (`makes_repository`): with it, a folder of
`config`, `objects/` and `refs/` written one file at a time becomes a repository's folder, which git
run inside it takes for a bare repository and reads commands from.

Every read here is bounded (a `HEAD` or `.git` file: its first bytes) and never waits (a FIFO is
not opened for reading).
"""

from __future__ import annotations

import os
import stat

# code points HFS+ ignores in a name (git's is_hfs_dotgit)
_HFS_IGNORED = frozenset("\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d"
                         "\u206e\u206f\ufeff")
_READ = 4096  # bytes of a HEAD or a `.git` file looked at
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def is_dot_git(name: str) -> bool:
    """`name` is `.git` to some file system (see the module's doc)."""
    plain = "".join(ch for ch in name if ch not in _HFS_IGNORED).casefold().rstrip(". ")
    return plain in (".git", "git~1")


def dot_git_part(path: str) -> str | None:
    """The path up to and with its first `.git` component (None: it has none)."""
    parts = path.split(os.sep)
    for i, part in enumerate(parts):
        if is_dot_git(part):
            return os.sep.join(parts[: i + 1]) or os.sep
    return None


def _head(folder_fd: int, name: str) -> bytes | None:
    """The first bytes of the regular file `name` in the folder (None: not one)."""
    try:
        fd = os.open(name, _FLAGS, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _READ)
    except OSError:
        return None
    finally:
        os.close(fd)


def _kind(folder_fd: int, name: str) -> int | None:
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode)
    except OSError:
        return None


def _head_text(data: bytes) -> bool:
    """`data` is a HEAD git accepts: `ref: refs/…`, or an object's hex name."""
    text = data[:_READ].decode("ascii", "replace").strip()
    if text.startswith("ref:"):
        return text[4:].lstrip().startswith("refs/")
    return len(text) >= 40 and all(c in "0123456789abcdef" for c in text[:40])


def makes_repository(path: str, data: bytes | None) -> bool:
    """Writing `data` at `path` makes a `HEAD` git accepts: the first step to making its folder one
    git takes for a repository's own (and then reads commands from), under any name."""
    return data is not None and is_head_name(os.path.basename(path)) and _head_text(data)


def is_head_name(name: str) -> bool:
    return "".join(ch for ch in name if ch not in _HFS_IGNORED).casefold().rstrip(". ") == "head"


def _valid_head(folder_fd: int) -> bool:
    """`HEAD` is as git wants it: a link into refs/, `ref: refs/…`, or an object's hex name."""
    if _kind(folder_fd, "HEAD") == stat.S_IFLNK:
        try:
            return os.readlink("HEAD", dir_fd=folder_fd).startswith("refs/")
        except OSError:
            return False
    data = _head(folder_fd, "HEAD")
    return data is not None and _head_text(data)


def is_repository_folder(folder_fd: int) -> bool:
    """The open folder is one git takes for a repository's own folder (see the module's doc)."""
    if not _valid_head(folder_fd):
        return False
    if _kind(folder_fd, "commondir") == stat.S_IFREG:
        return True
    return _kind(folder_fd, "objects") == stat.S_IFDIR and _kind(folder_fd, "refs") == stat.S_IFDIR


def pointed_folders(folder_fd: int, folder: str) -> list[str]:
    """The real folders the `.git` file in `folder` (open as `folder_fd`) points to: its `gitdir`,
    and that folder's `commondir`."""
    data = _head(folder_fd, ".git")
    if data is None:
        return []
    named = _first_line(data)
    if not named.startswith("gitdir:") or not named[len("gitdir:"):].strip():
        return []
    gitdir = os.path.realpath(os.path.join(folder, named[len("gitdir:"):].strip()))
    found = [gitdir]
    try:
        fd = os.open(gitdir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return found
    try:
        common = _first_line(_head(fd, "commondir") or b"")
    finally:
        os.close(fd)
    if common:
        found.append(os.path.realpath(os.path.join(gitdir, common)))
    return found


def _first_line(data: bytes) -> str:
    """The first line of a file git wrote, stripped ("" for none, or one no path can hold)."""
    lines = data.decode("utf-8", "replace").splitlines()
    first = lines[0].strip() if lines else ""
    return "" if "\0" in first else first


def machinery(path: str) -> str | None:
    """The git folder `path` (absolute, normalized) is in, or None. Looks at every folder on its
    way that exists (see the module's doc)."""
    named = dot_git_part(path)
    if named is not None:
        return named
    parts = [p for p in path.split(os.sep) if p]
    pointed: list[str] = []
    folder = os.sep
    for i in range(len(parts) + 1):
        if i:
            folder = os.path.join(folder, parts[i - 1])
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            break  # missing from here on (or not a folder): nothing more to look at
        try:
            if i and is_repository_folder(fd):
                return folder
            pointed += pointed_folders(fd, folder)
        finally:
            os.close(fd)
    for gitdir in pointed:
        if path == gitdir or path.startswith(gitdir.rstrip(os.sep) + os.sep):
            return gitdir
    return None


__all__ = ["dot_git_part", "is_dot_git", "is_repository_folder", "machinery", "makes_repository", "pointed_folders"]
