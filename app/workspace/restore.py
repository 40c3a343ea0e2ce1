"""Putting the tracked files back as they were at an entry, and undoing that.

A plan compares, for every tracked file, its state at the entry (`FileHistory.state_at`) with
the disk. A file that differs is restored (written, or removed when it did not exist there)
unless:

- it changed on disk since treechat last wrote it (bash, an editor, git): `blocked` — it is
  overwritten only with `force`, and what that replaces is kept for the undo like the rest;
- it cannot be restored at all: the content at the entry was not kept (over the size a
  checkpoint keeps), or the path is now a directory, a FIFO, a link to nothing: `unavailable`.

Applying writes the undo record first (what each file was), then the files, then what treechat
wrote (`written.WrittenLog`). `undo_last` puts back what the newest restore replaced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from treechat.agent.tools.file_write import remove_file, replace_file
from treechat.agent.tools.workfolder import shown_path

from .blobs import digest
from .diff_text import Diff, file_diff
from .disk import OnDisk, look
from .history import FileHistory
from .journal import Journal, UndoFile

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
        return [s for s in self.steps if not s.blocked and not s.unavailable]

    @property
    def blocked(self) -> list[FileStep]:
        return [s for s in self.steps if s.blocked and not s.unavailable]

    @property
    def unavailable(self) -> list[FileStep]:
        return [s for s in self.steps if s.unavailable]

    def __bool__(self) -> bool:
        return bool(self.steps)

    def diff_text(self, steps: Sequence[FileStep] | None = None) -> str:
        return "\n".join(s.diff.text for s in (self.steps if steps is None else steps) if s.diff.text)


@dataclass
class Outcome:
    written: list[str] = field(default_factory=list)  # shown paths
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (shown path, why)

    @property
    def changed(self) -> int:
        return len(self.written) + len(self.removed)


def plan_restore(session_id: str, target_id: str | None, path_ids: Sequence[str], history: FileHistory,
                 journal: Journal, folder: str) -> RestorePlan:
    """Blocking (reads the tracked files): call it off the event loop (`plan_restore_async`)."""
    steps = []
    for path, target in history.state_at(path_ids).items():
        disk = look(path)
        shown = shown_path(path, folder)
        if not disk.other and disk.content == target:
            continue
        wanted = history.blob(target) if target is not None else None
        unavailable = ""
        if disk.other:
            unavailable = f"it is {disk.other} now; left as it is"
        elif target is not None and wanted is None:
            why = history.not_kept_reason(target) or "damaged"
            unavailable = f"its content at that point was not kept ({why})"
        blocked = ""
        if not unavailable and disk.content is not None and disk.content != journal.expected(path, history):
            blocked = CHANGED
        diff = file_diff(disk.data, wanted, shown) if not unavailable else Diff("", 0, 0)
        steps.append(FileStep(path, shown, target, disk, diff, blocked, unavailable))
    return RestorePlan(session_id, target_id, tuple(steps))


async def plan_restore_async(session_id: str, target_id: str | None, path_ids: Sequence[str],
                             history: FileHistory, journal: Journal, folder: str) -> RestorePlan:
    return await asyncio.to_thread(plan_restore, session_id, target_id, list(path_ids), history, journal, folder)


def apply_restore(plan: RestorePlan, history: FileHistory, journal: Journal, *, force: bool = False) -> Outcome:
    """Restore the ready files (and, with `force`, the blocked ones); blocking."""
    outcome = Outcome()
    todo = []
    for step in plan.steps:
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
    try:
        for step, _, data in todo:
            if data is None:
                remove_file(step.path)
                outcome.removed.append(step.shown)
            else:
                replace_file(step.path, data, make_parents=True)
                outcome.written.append(step.shown)
            journal.wrote(step.path, step.target)
    finally:
        journal.save()
    return outcome


@dataclass
class UndoOutcome(Outcome):
    blocked: list[str] = field(default_factory=list)  # shown paths that changed since the restore
    nothing: bool = False  # there was no restore to undo


def undo_last(journal: Journal, history: FileHistory, folder: str, *, force: bool = False) -> UndoOutcome:
    """Put back what the newest restore replaced; all or nothing without `force` (blocking)."""
    outcome = UndoOutcome()
    if not journal.undo:
        outcome.nothing = True
        return outcome
    record = journal.undo[-1]
    looks = {f.path: look(f.path) for f in record.files}
    changed = {f.path for f in record.files
               if looks[f.path].other or (looks[f.path].content is not None and looks[f.path].content != f.wrote)}
    outcome.blocked = [shown_path(p, folder) for p in changed]
    if outcome.blocked and not force:
        return outcome
    journal.undo.pop()
    overwritten = [(f, looks[f.path]) for f in record.files if f.path in changed and not looks[f.path].other]
    if overwritten:  # --force: what the undo overwrites is kept too (the next --undo brings it back)
        keep = {now.content: now.data for _, now in overwritten if now.content and now.data is not None}
        journal.push(record.to, [UndoFile(f.path, now.content, f.replaced) for f, now in overwritten], keep)
    try:
        for f in record.files:
            now = looks[f.path]
            if now.other:
                outcome.skipped.append((shown_path(f.path, folder), "it is not a regular file now"))
                continue
            if f.replaced is None:
                remove_file(f.path)
                outcome.removed.append(shown_path(f.path, folder))
            else:
                data = record.content(f.replaced) or history.blob(f.replaced)
                if data is None or digest(data) != f.replaced:
                    outcome.skipped.append((shown_path(f.path, folder), "what it replaced was not kept"))
                    continue
                replace_file(f.path, data, make_parents=True)
                outcome.written.append(shown_path(f.path, folder))
            journal.wrote(f.path, f.replaced)
    finally:
        journal.save()
    return outcome
