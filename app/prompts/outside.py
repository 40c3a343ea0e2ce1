"""Files read on the repository's behalf stay inside the working folder unless the person allows more.

A project's AGENTS.md or CLAUDE.md, a prompt template, a SKILL.md (or a skills folder), an `@`
attachment or a `-a` file may be a symbolic link, or a `..` path, that leads out of the working
folder: to ~/.ssh/id_rsa, ~/.aws/credentials. Whatever such a file holds would go to the model.
So each is a *read outside*, as for the read tool (app/agent/tools/reach.py): its real path (every
link followed) is checked before it is opened, and a file whose real path is outside the working
folder is read only once the person allowed it: the app asks the read tool's question, print mode
refuses with a line on stderr unless --yes or `allow_reads_outside = true`.

Files found in the person's own folders (the config folder, ~/.pi/agent, ~/.claude/skills, …) are
theirs and are read wherever their links lead; a link *from the repository* to one of them is not.

`ReadsOutside` keeps one chat's answers and the files still to be asked about. The loaders are
synchronous: they read nothing that is not allowed yet and note it (`allows` returns False and the
file is pending); the controller asks about what is pending (`ask`) at its next await, then loads again.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

# (what is read, its real path, the working folder) -> allowed; the read tool's ReadConfirm
Ask = Callable[[str, str, str], Awaitable[bool]]


class Undecided(Exception):
    """A file outside the working folder that nobody was asked about yet: ask, then load again."""


@dataclass(frozen=True)
class Held:
    """A file not read yet: what it is for the question ("AGENTS.md", "SKILL.md", "skills folder",
    "template", "attachment"), the path as found, and where it really is."""

    kind: str
    shown: str
    real: str


def repository_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds `.git` (a folder, or a file in worktrees)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def inside(real: str, folder: str) -> bool:
    """Is the real path `real` the real folder `folder` or under it?"""
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def working_folder(cwd: str | os.PathLike[str]) -> str:
    """The repository root (the nearest folder at or above `cwd` holding `.git`), else `cwd`; real."""
    start = Path(os.path.realpath(cwd))
    return str(repository_root(start) or start)


def real_path(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(path)


class ReadsOutside:
    """One chat's reads outside the working folder: what was allowed or refused, what is pending."""

    def __init__(self, folder: str | os.PathLike[str], *, anywhere: bool = False) -> None:
        self.folder = os.path.realpath(folder)
        self.anywhere = anywhere  # allow_reads_outside: every file is read, nothing is asked
        self.answers: dict[str, bool] = {}  # real path -> the person's answer
        self.folders: list[str] = []  # skills folders allowed: what is under them is allowed with them
        self.pending: dict[str, Held] = {}  # real path -> the file to ask about
        self.held: dict[str, Held] = {}  # every file held back, asked about or not (for listings)
        self._asking: asyncio.Lock | None = None

    @classmethod
    def for_cwd(cls, cwd: str | os.PathLike[str], *, anywhere: bool = False) -> ReadsOutside:
        return cls(working_folder(cwd), anywhere=anywhere)

    def verdict(self, real: str) -> bool | None:
        """True: it may be read; False: the person said no; None: not asked yet."""
        if self.anywhere or inside(real, self.folder):
            return True
        if real in self.answers:
            return self.answers[real]
        if any(inside(real, f) for f in self.folders):
            return True
        return None

    def allows(self, kind: str, shown: str | os.PathLike[str], real: str) -> bool:
        """May the file whose real path is `real` be read now? When nobody was asked, it is noted
        as pending (and not read)."""
        verdict = self.verdict(real)
        if verdict is not True:
            self.held.setdefault(real, Held(kind, str(shown), real))
        if verdict is None:
            self.pending.setdefault(real, self.held[real])
        return verdict is True

    def held_lines(self) -> list[str]:
        """One line per file held back: where it leads, and whether it was refused or is still to be asked."""
        out = []
        for real, held in self.held.items():
            verdict = self.verdict(real)
            if verdict is not True:
                said = "you did not allow reading there" if verdict is False else "asked at your next message"
                out.append(f"{held.kind} {held.shown} leads to {real}: {said}")
        return out

    async def ask(self, confirm: Ask | None) -> bool:
        """Ask about each pending file, one question at a time (`confirm` None: nobody can be asked,
        so each is refused). True when one was allowed (what depends on it is loaded again)."""
        if self._asking is None:
            self._asking = asyncio.Lock()
        allowed = False
        async with self._asking:  # two sends at once ask one question about a file, not two
            while self.pending:
                real, held = next(iter(self.pending.items()))
                answer = bool(confirm is not None and await confirm(held.kind, real, self.folder))
                self.pending.pop(real, None)
                self.answers[real] = answer
                if answer and held.kind == "skills folder":
                    self.folders.append(real)
                allowed = allowed or answer
        return allowed
