"""Where a path really is, as edit, write and a restore say it: inside the working folder or not,
and in git's own folders (`git_dir`) or not.

The working folder and `inside` are read's, ls's and grep's (`reach.py`): the repository root, or
the working directory when there is none; a path is inside when its real path (every link
followed) is the folder or under it, so a link inside that leads out counts as outside.

`Boundary` is where a model's edit and write, and a restore, may write (issue 36): never in git's
machinery, whatever was allowed (edits for the session, `--yes`), unless the user named that very
file in config.toml's `writable_git_paths`; and a restore only inside the working folder, at a
path with no link on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from .git_dir import machinery, pointed_folders
from .reach import inside, working_folder

__all__ = ["Boundary", "inside", "shown_path", "working_folder"]


def shown_path(real: str, folder: str) -> str:
    """A path as a person reads it: relative to the working folder when inside it (one that is
    not absolute and normalized, as a checkpoint may name, as it is)."""
    if not os.path.isabs(real) or os.path.normpath(real) != real:
        return real
    if inside(real, folder) and real != folder:
        return os.path.relpath(real, folder)
    return real


@dataclass(frozen=True)
class Boundary:
    folder: str  # the working folder (a real path)
    writable_git: frozenset[str] = frozenset()  # writable_git_paths, as real paths
    pointed: tuple[str, ...] = ()  # the folders the working folder's `.git` file points to

    @classmethod
    def of(cls, cwd: str | os.PathLike[str], writable_git_paths: Iterable[str] = ()) -> Boundary:
        """The working folder of `cwd`; `writable_git_paths` relative to it (or absolute, or `~/…`)."""
        folder = working_folder(cwd)
        named = frozenset(os.path.realpath(os.path.join(folder, os.path.expanduser(p))) for p in writable_git_paths)
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return cls(folder, named)
        try:
            return cls(folder, named, tuple(pointed_folders(fd, folder)))
        finally:
            os.close(fd)

    def git_ok(self, real: str) -> bool:
        """The user named this file in writable_git_paths."""
        return real in self.writable_git

    def git_part(self, real: str) -> str | None:
        """The git folder the absolute path `real` is in (None: none, or the user named the file)."""
        if self.git_ok(real):
            return None
        found = machinery(real)
        return found if found is not None else next((p for p in self.pointed if inside(real, p)), None)

    def restore_refusal(self, path: str) -> str | None:
        """Why a restore never touches a checkpoint's `path` (None: it may), as a clause: not an
        absolute path, outside the working folder, a link on its way now, in git's own folder."""
        if "\0" in path or not os.path.isabs(path) or os.path.normpath(path) != path:
            return "it is not an absolute, normalized path"
        if not inside(path, self.folder) or path == self.folder:
            return f"it is outside the working folder {self.folder}"
        folder = os.path.dirname(path)
        real_folder = os.path.realpath(folder)
        if real_folder != folder:
            return f"a folder on its way is a symbolic link now (to {os.path.join(real_folder, os.path.basename(path))})"
        if os.path.islink(path):
            return f"it is a symbolic link now (to {os.path.realpath(path)})"
        git = self.git_part(path)
        if git is not None:
            return f"it is in git's own folder {git}"
        return None
