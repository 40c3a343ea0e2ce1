"""The working folder: where edit and write change files without asking twice.

It is the repository root (the nearest folder at or above the working directory holding
`.git`), or the working directory itself when there is none. A path is inside when its real
path (every link followed) is the folder or under it, so a link inside that leads out counts as
outside. (Issue 21 gives read, ls and grep the same notion; this module is the small part edit
and write need, to be replaced by that helper when both have landed.)
"""

from __future__ import annotations

import os
from pathlib import Path

from treechat.context_files import repository_root


def working_folder(cwd: str | os.PathLike[str]) -> str:
    """The real path of the repository root at or above `cwd`, else of `cwd`."""
    start = Path(cwd).resolve()
    return str(repository_root(start) or start)


def inside(real: str, folder: str) -> bool:
    """Is the real path `real` the folder `folder` (a real path too) or under it?"""
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def shown_path(real: str, folder: str) -> str:
    """A path as a person reads it: relative to the working folder when inside it."""
    if inside(real, folder) and real != folder:
        return os.path.relpath(real, folder)
    return real
