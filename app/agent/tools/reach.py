"""Where the file tools may look: inside the working folder freely, outside it only when the user
says so (issue 21: read, ls and grep read anything the user could, `..`, absolute paths and
symbolic links alike — as root, the shadow password file).

The working folder is the repository root (the nearest folder upward holding `.git`), or the
folder treechat runs in when there is none. A path is outside when its real path (every link
followed) is not in the working folder's real path: a link inside that leads out counts as
outside. Outside, the tool asks `confirm` (the app: a dialog typing cannot answer; print mode:
refused unless --yes or `allow_reads_outside` allows it) and tells the model when it may not.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from treechat.prompts.context_files import repository_root

ReadConfirm = Callable[[str, str, str], Awaitable[bool]]  # (tool, real path, working folder) -> allowed


def working_folder(cwd: str | os.PathLike[str]) -> str:
    """The repository root (the nearest folder at or above `cwd` holding `.git`), else `cwd`."""
    start = Path(cwd).resolve()
    return str(repository_root(start) or start)


def inside(real: str, folder: str) -> bool:
    """Is the real path `real` the folder `folder` (a real path too) or under it?"""
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass
class Reach:
    root: str  # the working folder's real path
    confirm: ReadConfirm | None = None  # None: nothing outside is read (and the model is told why)
    refused_hint: str = ""  # what the model is told lets the user allow it (print mode: --yes …)
    anywhere: bool = False  # allow_reads_outside: nothing is asked, links are followed wherever they go

    @classmethod
    def of(cls, folder: str | os.PathLike[str], confirm: ReadConfirm | None = None, *, hint: str = "") -> Reach:
        return cls(os.path.realpath(folder), confirm, hint)

    @classmethod
    def for_run(cls, cwd: str | os.PathLike[str], confirm: ReadConfirm | None, *, anywhere: bool = False) -> Reach:
        """The working folder of `cwd`; outside it as `confirm` says (None: refused), or
        anywhere (config.toml's `allow_reads_outside`)."""
        if anywhere:
            confirm = _anywhere
        hint = "" if confirm is not None else "In print mode, --yes (or allow_reads_outside = true in config.toml) allows it."
        reach = cls.of(working_folder(cwd), confirm, hint=hint)
        reach.anywhere = anywhere
        return reach

    def real(self, path: Path) -> str:
        return os.path.realpath(path)

    def is_inside(self, path: Path) -> bool:
        return inside(self.real(path), self.root)

    async def refusal(self, tool: str, path: Path, shown: str) -> str | None:
        """None when `tool` may read `path` (inside, or allowed); else what the model is told."""
        real = self.real(path)
        if inside(real, self.root):
            return None
        if self.confirm is not None and await self.confirm(tool, real, self.root):
            return None  # (asked each time: allowing a folder's listing is not allowing its files)
        where = f"{shown} ({real})" if real != shown else shown
        hint = f" {self.refused_hint}" if self.refused_hint else ""
        return (f"Not read: {where} is outside the working folder {self.root}, and the user did not allow reading "
                f"there.{hint}")


async def _anywhere(tool: str, path: str, folder: str) -> bool:
    return True
