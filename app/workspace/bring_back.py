"""A sub-agent's file changes made in its own git worktree, brought back into its caller's folder
(issue 39). Blocking: call it off the event loop.

The worktree's files are looked at when it is made (`Start`) and when the sub-agent ends; a file
that differs was changed by it (by edit, write or bash alike). Each such file comes into the
caller's folder (the folder the worktree was made from) by the restore's rule, taken from the
sub-agent's start rather than from treechat's last write: it is written (or removed) only when
the caller's folder still holds what the sub-agent started from; one changed there since (by the
person, the caller, another sub-agent) is never overwritten, and the outcome carries the diff
from its version there to the sub-agent's. Only regular files under `LOOK_LIMIT` bytes move; a
path a restore never writes (`Boundary.restore_refusal`: git's own folders, a link on the way)
is named, never touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from treechat.agent.tools.file_write import FileProblem, remove_file, replace_file
from treechat.agent.tools.workfolder import Boundary

from .diff_text import file_diff
from .disk import OnDisk, look
from .worktrees import Worktree, listed_files

LOOK_LIMIT = 16 * 1024 * 1024  # bytes of one file brought back


def _key(disk: OnDisk) -> str:
    """What a file is, for comparing: its hash, `-` absent, or `?why` (not a file we move)."""
    return disk.content if disk.content is not None else (f"?{disk.other}" if disk.other else "-")


@dataclass(frozen=True)
class Start:
    """The worktree's files as the sub-agent found them: path relative to its root → `_key`."""

    files: Mapping[str, str]


def start_of(tree: Worktree) -> Start:
    return Start({rel: _key(look(os.path.join(tree.path, rel), LOOK_LIMIT)) for rel in listed_files(tree.path)})


@dataclass(frozen=True)
class Brought:
    path: str  # in the caller's folder
    shown: str  # relative to the caller's folder's root
    before: bytes | None  # what the caller's folder held (None: absent)
    after: bytes | None  # the sub-agent's version (None: it removed the file)


@dataclass
class BackOutcome:
    came_in: list[Brought] = field(default_factory=list)
    same: list[str] = field(default_factory=list)  # already as the sub-agent left them (shown)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (shown, the diff to the sub-agent's version)
    not_moved: list[tuple[str, str]] = field(default_factory=list)  # (shown, why)


def bring_back(tree: Worktree, start: Start, boundary: Boundary) -> BackOutcome:
    """Every file the sub-agent changed in `tree`, into `tree.checkout` (its caller's folder)."""
    outcome = BackOutcome()
    now = {rel: _key(look(os.path.join(tree.path, rel), LOOK_LIMIT)) for rel in listed_files(tree.path)}
    for rel in sorted(set(start.files) | set(now)):
        was, got = start.files.get(rel, "-"), now.get(rel, "-")
        if was == got:
            continue
        target = os.path.join(tree.checkout, rel)
        if got.startswith("?"):
            outcome.not_moved.append((rel, f"it is {got[1:]} in the sub-agent's worktree"))
            continue
        refused = boundary.restore_refusal(target)
        if refused is not None:
            outcome.not_moved.append((rel, refused))
            continue
        theirs = look(os.path.join(tree.path, rel), LOOK_LIMIT)
        if theirs.other or _key(theirs) != got:
            outcome.not_moved.append((rel, "it changed while it was being brought back"))
            continue
        here = look(target, LOOK_LIMIT)
        if _key(here) == got:
            outcome.same.append(rel)
        elif _key(here) != was:
            outcome.kept.append((rel, file_diff(here.data, theirs.data, rel).text))
        else:
            try:
                if theirs.data is None:
                    remove_file(target, git_ok=boundary.git_ok(target))
                else:
                    replace_file(target, theirs.data, make_parents=True, git_ok=boundary.git_ok(target))
            except (FileProblem, OSError) as err:
                outcome.not_moved.append((rel, getattr(err, "strerror", None) or str(err)))
                continue
            outcome.came_in.append(Brought(target, rel, here.data, theirs.data))
    return outcome


__all__ = ["BackOutcome", "Brought", "LOOK_LIMIT", "Start", "bring_back", "start_of"]
