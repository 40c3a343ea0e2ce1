"""Where a path really is, as edit and write say it: inside the working folder or not.

The working folder and `inside` are read's, ls's and grep's (`reach.py`): the repository root, or
the working directory when there is none; a path is inside when its real path (every link
followed) is the folder or under it, so a link inside that leads out counts as outside.
"""

from __future__ import annotations

import os

from .reach import inside, working_folder

__all__ = ["inside", "shown_path", "working_folder"]


def shown_path(real: str, folder: str) -> str:
    """A path as a person reads it: relative to the working folder when inside it."""
    if inside(real, folder) and real != folder:
        return os.path.relpath(real, folder)
    return real
