"""Putting the tracked files back as they were at an entry, and undoing that.

A plan compares, for every tracked file, its state at the entry (`FileHistory.state_at`) with
the disk. A file that differs is restored (written, or removed when it did not exist there)
unless:

- it changed on disk since treechat last wrote it (bash, an editor, git): `blocked` — it is
  overwritten only with `force`, and what that replaces is kept for the undo like the rest;
- it cannot be restored at all: the content at the entry was not kept (over the size a
  checkpoint keeps), or the path is now a directory, a FIFO, a link to nothing: `unavailable`;
- it is never touched, not even read (`Boundary.restore_refusal`): outside the working folder, in
  git's own folders, a symbolic link on its way now, not an absolute path — what an imported or
  shared session's checkpoints may name: `refused`.

The rest of a restore proceeds without the refused files, as without the unavailable ones; each is
named. A file is written at its path exactly (`file_write.open_parent`: no link followed, checked
again on the open folders), so a folder swapped for a link since the plan cannot carry it out.

Applying writes the undo record first (what each file was), then what is about to be written
(`written.WrittenLog.intend`: a kill -9 from here on leaves no file falsely "changed"), then the
files, then what treechat wrote. A kill leaves no temporary file for long: the next plan that
looks at a file sweeps a dead writer's (`whole_file.sweep`). `undo_last` puts back what the
newest restore replaced.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from treechat.agent.tools.file_write import FileProblem, open_exact_folder, remove_file, replace_file
from treechat.agent.tools.git_dir import makes_repository
from treechat.agent.tools.workfolder import Boundary, shown_path
from treechat.export.whole_file import sweep

from .blobs import digest
from .diff_text import Diff, file_diff
from .disk import OnDisk, look
from .history import FileHistory
from .journal import Journal, UndoFile, UndoRecord

CHANGED = "changed on disk since treechat last wrote it"


@dataclass(frozen=True)
class FileStep:
    path: str
    shown: str
    target: str | None  # the content at the entry (None: the file did not exist there)
    disk: OnDisk
    diff: Diff  # disk → entry
    blocked: str = ""
    unavailable: str = ""
    refused: str = ""  # never touched: why (see the module's doc)

    @property
    def removes(self) -> bool:
        return self.target is None


@dataclass(frozen=True)
class RestorePlan:
    session_id: str
    target_id: str | None  # the entry (None: before the first)
    steps: tuple[FileStep, ...]  # the tracked files that differ from the disk

    @property
    def ready(self) -> list[FileStep]:
        return [s for s in self.steps if not s.blocked and not s.unavailable and not s.refused]

    @property
    def blocked(self) -> list[FileStep]:
        return [s for s in self.steps if s.blocked and not s.unavailable and not s.refused]

    @property
    def unavailable(self) -> list[FileStep]:
        return [s for s in self.steps if s.unavailable and not s.refused]

    @property
    def refused(self) -> list[FileStep]:
        return [s for s in self.steps if s.refused]

    def __bool__(self) -> bool:
        return bool(self.steps)

    def diff_text(self, steps: Sequence[FileStep] | None = None) -> str:
        return "\n".join(s.diff.text for s in (self.steps if steps is None else steps) if s.diff.text)


@dataclass
class Outcome:
    written: list[str] = field(default_factory=list)  # shown paths
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (shown path, why)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (shown path, why): never touched

    @property
    def changed(self) -> int:
        return len(self.written) + len(self.removed)


def plan_restore(session_id: str, target_id: str | None, path_ids: Sequence[str], history: FileHistory,
                 journal: Journal, boundary: Boundary) -> RestorePlan:
    """Blocking (reads the tracked files): call it off the event loop (`plan_restore_async`)."""
    steps = []
    state = history.state_at(path_ids)
    refusals = {path: boundary.restore_refusal(path) for path in state}
    sweep_leftovers([p for p, why in refusals.items() if why is None], journal, boundary)
    for path, target in state.items():
        shown = shown_path(path, boundary.folder)
        refused = refusals[path]
        if refused is not None:
            steps.append(FileStep(path, shown, target, OnDisk(path, other=refused), Diff("", 0, 0), refused=refused))
            continue
        disk = look(path)
        if not disk.other and disk.content == target:
            continue
        wanted = history.blob(target) if target is not None else None
        if makes_repository(path, wanted) and not boundary.git_ok(path):
            why = f"its content there is a HEAD that would make {os.path.dirname(path)} a git repository's folder"
            steps.append(FileStep(path, shown, target, OnDisk(path, other=why), Diff("", 0, 0), refused=why))
            continue
        unavailable = ""
        if disk.other:
            unavailable = f"it is {disk.other} now; left as it is"
        elif target is not None and wanted is None:
            why = history.not_kept_reason(target) or "damaged"
            unavailable = f"its content at that point was not kept ({why})"
        blocked = ""
        if not unavailable and disk.content is not None and not journal.accepts(path, disk.content, history):
            blocked = CHANGED
        diff = file_diff(disk.data, wanted, shown) if not unavailable else Diff("", 0, 0)
        steps.append(FileStep(path, shown, target, disk, diff, blocked, unavailable))
    return RestorePlan(session_id, target_id, tuple(steps))


def sweep_leftovers(tracked: Sequence[str], journal: Journal, boundary: Boundary) -> None:
    """What writers killed mid-write left beside the tracked files (already checked against
    `boundary`) and beside every file a write never said it finished (`written.unfinished`)."""
    unfinished = [p for p in journal.written.unfinished() if boundary.restore_refusal(p) is None]
    sweep_beside([*tracked, *unfinished], boundary)


def sweep_beside(paths: Sequence[str], boundary: Boundary) -> None:
    """Remove what a writer killed mid-write left beside these files (a pid-tagged temporary
    file whose process is gone), one look per folder. Only folders reached with no link."""
    by_folder: dict[str, list[str]] = {}
    for path in paths:
        folder, name = os.path.split(path)
        if name not in by_folder.setdefault(folder, []):
            by_folder[folder].append(name)
    for folder, names in by_folder.items():
        try:
            fd = open_exact_folder(folder, git_ok=all(boundary.git_ok(os.path.join(folder, n)) for n in names))
        except OSError:
            continue  # missing, or no longer reached without a link: nothing of ours to take
        try:
            sweep(fd, names)
        finally:
            os.close(fd)


async def plan_restore_async(session_id: str, target_id: str | None, path_ids: Sequence[str],
                             history: FileHistory, journal: Journal, boundary: Boundary) -> RestorePlan:
    return await asyncio.to_thread(plan_restore, session_id, target_id, list(path_ids), history, journal, boundary)


def apply_restore(plan: RestorePlan, history: FileHistory, journal: Journal, boundary: Boundary, *,
                  force: bool = False) -> Outcome:
    """Restore the ready files (and, with `force`, the blocked ones); blocking. The refused ones
    are never written, whatever the plan says (checked again here)."""
    outcome = Outcome()
    todo = []
    for step in plan.steps:
        refused = step.refused or boundary.restore_refusal(step.path)
        if refused:
            outcome.refused.append((step.shown, refused))
            continue
        if step.unavailable:
            outcome.skipped.append((step.shown, step.unavailable))
            continue
        if step.blocked and not force:
            outcome.skipped.append((step.shown, step.blocked))
            continue
        now = look(step.path)
        if now.other or now.content != step.disk.content:
            outcome.skipped.append((step.shown, "it changed while the restore was being decided"))
            continue
        data = history.blob(step.target) if step.target is not None else None
        todo.append((step, now, data))
    if not todo:
        return outcome
    replaced = {now.content: now.data for _, now, _ in todo if now.content is not None and now.data is not None}
    journal.push(plan.target_id, [UndoFile(s.path, now.content, s.target) for s, now, _ in todo], replaced)
    journal.save()  # what is about to be replaced is on disk before anything is
    journal.intend([(s.path, now.content, s.target) for s, now, _ in todo])
    try:
        for step, _, data in todo:
            try:
                _put(step.path, data, boundary)
            except FileProblem as err:  # a folder on its way became a link (or git's) since the plan
                outcome.refused.append((step.shown, err.strerror or str(err)))
                continue
            (outcome.removed if data is None else outcome.written).append(step.shown)
            journal.wrote(step.path, step.target)
    finally:
        journal.save()
    return outcome


def _put(path: str, data: bytes | None, boundary: Boundary) -> None:
    """Write `data` at `path` exactly (None: remove it); FileProblem when it cannot be reached so."""
    if data is None:
        remove_file(path, git_ok=boundary.git_ok(path))
    else:
        replace_file(path, data, make_parents=True, git_ok=boundary.git_ok(path))


@dataclass
class UndoOutcome(Outcome):
    blocked: list[str] = field(default_factory=list)  # shown paths that changed since the restore
    nothing: bool = False  # there was no restore to undo


def undo_last(journal: Journal, history: FileHistory, boundary: Boundary, *, force: bool = False) -> UndoOutcome:
    """Put back what the newest restore replaced; all or nothing without `force` (blocking). A
    file the restore was about to write when it was killed is as it was: not "changed"."""
    outcome = UndoOutcome()
    if not journal.undo:
        outcome.nothing = True
        return outcome
    folder = boundary.folder
    record = journal.undo[-1]
    refusals = {f.path: boundary.restore_refusal(f.path) for f in record.files}
    files = [f for f in record.files if refusals[f.path] is None]
    outcome.refused = [(shown_path(f.path, folder), why) for f in record.files if (why := refusals[f.path])]
    sweep_leftovers([f.path for f in files], journal, boundary)
    looks = {f.path: look(f.path) for f in files}
    changed = {f.path for f in files
               if looks[f.path].other or (looks[f.path].content is not None
                                          and looks[f.path].content not in (f.wrote, f.replaced))}
    outcome.blocked = [shown_path(p, folder) for p in changed]
    if outcome.blocked and not force:
        return outcome
    journal.undo.pop()
    overwritten = [(f, looks[f.path]) for f in files if f.path in changed and not looks[f.path].other]
    if overwritten:  # --force: what the undo overwrites is kept too (the next --undo brings it back)
        keep = {now.content: now.data for _, now in overwritten if now.content and now.data is not None}
        journal.push(record.to, [UndoFile(f.path, now.content, f.replaced) for f, now in overwritten], keep)
    journal.intend([(f.path, looks[f.path].content, f.replaced) for f in files if not looks[f.path].other])
    try:
        for f in files:
            if _undo_one(f, looks[f.path], record, history, boundary, outcome):
                journal.wrote(f.path, f.replaced)
    finally:
        journal.save()
    return outcome


def _undo_one(f: UndoFile, now: OnDisk, record: UndoRecord, history: FileHistory, boundary: Boundary,
              outcome: UndoOutcome) -> bool:
    """Put back one file; whether it was."""
    shown = shown_path(f.path, boundary.folder)
    if now.other:
        outcome.skipped.append((shown, "it is not a regular file now"))
        return False
    data = None
    if f.replaced is not None:
        data = record.content(f.replaced) or history.blob(f.replaced)
        if data is None or digest(data) != f.replaced:
            outcome.skipped.append((shown, "what it replaced was not kept"))
            return False
    try:
        _put(f.path, data, boundary)
    except FileProblem as err:
        outcome.refused.append((shown, err.strerror or str(err)))
        return False
    (outcome.removed if data is None else outcome.written).append(shown)
    return True
