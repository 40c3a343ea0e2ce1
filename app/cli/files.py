"""`treechat files` and `treechat restore`: the files a session's tools changed, and putting them
back as they were at an entry (issue 23).

    treechat files SESSION [--json]                  the tracked files, with the entries that changed them
    treechat restore SESSION --to ENTRY [--yes] [--force]
    treechat restore SESSION --undo [--force]

A file changed on disk since treechat last wrote it blocks the whole restore (exit 1, naming the
files) unless `--force`, and what a restore replaces is kept for `--undo`. A tracked path a
restore never touches (outside the working folder of the folder the command runs in, in git's own
folders, a link on its way: `Boundary.restore_refusal`; what an imported or shared session may
name) is one line on stderr, never read nor written, and the rest proceeds (exit 1). The working
folder is the one the command runs in, never the folder a session's file says it was made in.
Without `--yes` it asks on a terminal, and elsewhere only says what it would do. Storage commands:
this module imports nothing heavy until a command runs (tests/cli/test_cli_imports.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from treechat.agent.tools.workfolder import Boundary
    from treechat.storage.base import SessionStorage
    from treechat.workspace.history import FileHistory
    from treechat.workspace.restore import Outcome, RestorePlan

    from .parser import Subcommands


WORKTREE_NOTE = "  (made in a run's own worktree)"


class FilesError(Exception):
    """An expected failure of these commands; the text is the line on stderr."""


def add_file_commands(sub: Subcommands, common: Callable[[argparse.ArgumentParser, str | None], None]) -> None:
    import argparse

    s = sub.add_parser("files", help="the files a session's tools changed, with the entries that changed them")
    common(s, argparse.SUPPRESS)
    s.add_argument("session", metavar="SESSION")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=cmd_files)

    s = sub.add_parser("restore", help="put a session's tracked files back as they were at an entry")
    common(s, argparse.SUPPRESS)
    s.add_argument("session", metavar="SESSION")
    s.add_argument("--to", metavar="ENTRY", help="an entry id (or prefix), 'leaf', or 'root' (before the first entry)")
    s.add_argument("--undo", action="store_true", help="bring back what the last restore of this session replaced")
    s.add_argument("--yes", action="store_true", help="restore without asking")
    s.add_argument("--force", action="store_true",
                   help="also overwrite files changed on disk since treechat wrote them (what it replaces is kept)")
    s.set_defaults(run=cmd_restore)


def _line(text: object) -> str:
    from treechat.text.sanitize import visible_line

    return visible_line(text)


class _Opened:
    """The catalog, the session, its checkpoints and its journal, for one command."""

    async def __aenter__(self) -> _Opened:
        return self

    async def open(self, args: argparse.Namespace) -> None:
        import asyncio

        from treechat.agent.tools.workfolder import Boundary
        from treechat.bootstrap import open_store, storage_kind, storage_settings
        from treechat.config.paths import resolve_home
        from treechat.storage.tree.index import TreeIndex
        from treechat.workspace.history import FileHistory
        from treechat.workspace.journal import Journal

        self.home = resolve_home(args.home)
        settings = storage_settings(args.home)  # (None: no config.toml; its defaults)
        # the folder this runs in, as the app's: a session's file may name any folder as its own
        self.boundary: Boundary = await asyncio.to_thread(
            Boundary.of, os.getcwd(), settings.writable_git_paths if settings is not None else ())
        self.folder = self.boundary.folder
        self.catalog = await open_store(storage_kind(args.storage, settings=settings), self.home, settings=settings)
        self.storage: SessionStorage = await self.catalog.open(args.session)
        self.history: FileHistory = await FileHistory.load(self.storage)
        self.tree = TreeIndex.build(await self.storage.get_tree_rows())
        self.leaf = await self.storage.get_leaf_id()
        self.journal = Journal(self.home, self.storage.session_id)

    async def __aexit__(self, *exc: object) -> None:
        catalog = getattr(self, "catalog", None)
        if catalog is not None:
            await catalog.close()

    def entry(self, ref: str) -> str | None:
        """An entry by id, unique prefix, 'leaf' or 'root' (None: before the first entry)."""
        if ref == "leaf":
            return self.leaf
        if ref in ("root", "null"):
            return None
        if ref in self.tree:
            return ref
        found = [i for i in self.tree.by_id if i.startswith(ref)]
        if len(found) == 1:
            return found[0]
        if found:
            raise FilesError(f"'{ref}' matches {len(found)} entries; type more of the id")
        raise FilesError(f"No entry '{ref}' in this session; `treechat files` and `treechat tree` show the ids")


@dataclass(frozen=True)
class ChangeRow:
    """One change of a tracked file, as `files` lists it."""

    entry_id: str  # the checkpoint: `restore --to` it for the files just after this change
    parent_id: str | None  # the entry before it: `restore --to` it for the files just before
    timestamp: str
    tool: str
    tool_call_id: str | None
    before: str | None
    after: str | None
    size: int | None
    on_path: bool  # on the path to the leaf
    kept: bool  # both contents are in the session (a restore can bring them back)
    added: int | None
    removed: int | None
    worktree: str | None = None  # made in a run's own git worktree (issue 39), not in this folder

    def to_json(self) -> dict[str, object]:
        return {"entryId": self.entry_id, "parentId": self.parent_id, "timestamp": self.timestamp, "tool": self.tool,
                "toolCallId": self.tool_call_id, "before": self.before, "after": self.after, "size": self.size,
                "onPath": self.on_path, "kept": self.kept, "added": self.added, "removed": self.removed,
                "worktree": self.worktree}

    @property
    def what(self) -> str:
        if self.before is None:
            return "created"
        if self.after is None:
            return "removed"
        return f"+{self.added} \u2212{self.removed}" if self.kept else "changed (not kept: too large)"


@dataclass(frozen=True)
class FileRow:
    path: str
    shown: str
    at_leaf: str | None
    on_disk: str | None
    disk_other: str
    changes: tuple[ChangeRow, ...]
    refused: str = ""  # a restore never touches it (and it is not looked at): why

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "shown": self.shown, "atLeaf": self.at_leaf, "onDisk": self.on_disk,
                "diskOther": self.disk_other or None, "refused": self.refused or None,
                "changes": [c.to_json() for c in self.changes]}


def file_rows(o: _Opened) -> list[FileRow]:
    from treechat.agent.tools.workfolder import shown_path
    from treechat.workspace.diff_text import file_diff
    from treechat.workspace.disk import look
    from treechat.workspace.restore import sweep_leftovers

    refusals = {path: o.boundary.restore_refusal(path) or "" for path in o.history.paths}
    sweep_leftovers([p for p, why in refusals.items() if not why], o.journal, o.boundary)
    on_path = set(o.tree.path_ids(o.leaf))
    at_leaf = o.history.state_at(o.tree.path_ids(o.leaf))
    rows = []
    for path in o.history.paths:
        refused = refusals[path]
        disk = look(path) if not refused else None
        changes = []
        for cp, change in o.history.changes_of(path):
            before = o.history.blob(change.before) if change.before else None
            after = o.history.blob(change.after) if change.after else None
            kept = (change.before is None or before is not None) and (change.after is None or after is not None)
            diff = file_diff(before, after, path) if kept else None
            changes.append(ChangeRow(cp.entry_id, cp.parent_id, cp.timestamp, cp.tool, cp.tool_call_id, change.before,
                                     change.after, change.size, cp.entry_id in on_path, kept,
                                     diff.added if diff else None, diff.removed if diff else None, cp.worktree))
        rows.append(FileRow(path, shown_path(path, o.folder), at_leaf.get(path), disk.content if disk else None,
                            disk.other if disk else "", tuple(changes), refused))
    return rows


async def cmd_files(args: argparse.Namespace) -> int:
    async with _Opened() as o:
        await o.open(args)
        rows = file_rows(o)
    if args.json:
        import json

        from treechat.text.sanitize import json_for_terminal

        data = {"sessionId": o.storage.session_id, "leafId": o.leaf, "folder": o.folder,
                "files": [r.to_json() for r in rows]}
        sys.stdout.write(json_for_terminal(json.dumps(data, ensure_ascii=False, indent=2)) + "\n")
        return 0
    if not rows:
        print("No tracked files: no edit, write or watched command changed a file in this session.")
        return 0
    for f in rows:
        same = "same as on disk" if f.on_disk == f.at_leaf and not f.disk_other else "differs from the disk"
        n = len(f.changes)
        state = f"never restored: {f.refused}" if f.refused else f"at the leaf: {same}"
        print(f"{_line(f.shown)}  ({n} change{'s' if n != 1 else ''}; {_line(state)})")
        for c in f.changes:
            print(f"  {'*' if c.on_path else ' '} {c.timestamp[:19].replace('T', ' ')}  {_line(c.entry_id)}  "
                  f"{_line(c.tool):<5}  {c.what}  (before it: {_line(c.parent_id or 'root')})"
                  + (WORKTREE_NOTE if c.worktree else ""))
    print("* on the path to the leaf. `treechat restore SESSION --to ENTRY` puts the files back as they were at ENTRY.")
    return 0


def _plan_lines(plan: RestorePlan) -> list[str]:
    lines = []
    for step in plan.steps:
        if step.refused:
            continue  # (on stderr: `_refused`)
        if step.unavailable:
            lines.append(f"  cannot restore {_line(step.shown)}: {_line(step.unavailable)}")
            continue
        what = "remove" if step.removes else "create" if step.disk.absent else f"restore ({step.diff.summary})"
        note = f"  [{step.blocked}]" if step.blocked else ""
        lines.append(f"  {what} {_line(step.shown)}{note}")
    return lines


async def cmd_restore(args: argparse.Namespace) -> int:
    import asyncio

    from treechat.workspace.restore import apply_restore, plan_restore, undo_last

    if args.undo == bool(args.to):
        raise FilesError("give --to ENTRY (an id from `treechat files` or `treechat tree`), or --undo")
    async with _Opened() as o:
        await o.open(args)
        if args.undo:
            undone = await asyncio.to_thread(undo_last, o.journal, o.history, o.boundary, force=args.force)
            if undone.nothing:
                raise FilesError("no restore to undo in this session")
            if undone.blocked and not args.force:
                raise FilesError(f"not undone: {', '.join(undone.blocked)} changed since the restore; --force "
                                 "overwrites (what it overwrites is kept: the next --undo brings it back)")
            _report(undone)
            return 1 if undone.skipped or undone.refused else 0
        target = o.entry(args.to)
        plan = await asyncio.to_thread(plan_restore, o.storage.session_id, target, o.tree.path_ids(target),
                                       o.history, o.journal, o.boundary)
        where = f"entry {target}" if target else "the start of the session"
        _refused([(s.shown, s.refused) for s in plan.refused])
        n = len(plan.steps) - len(plan.refused)
        if not n:
            if plan.refused:
                raise FilesError("nothing was restored: every file that differs is one a restore never writes (above)")
            print(f"Nothing to restore: the tracked files are as they were at {where}.")
            return 0
        todo = plan.ready + (plan.blocked if args.force else [])
        print(f"At {_line(where)}, {n} tracked file{'s differ' if n != 1 else ' differs'} from the disk:")
        print("\n".join(_plan_lines(plan)))
        if plan.blocked and not args.force:
            names = ", ".join(s.shown for s in plan.blocked)
            raise FilesError(f"not restored: {names} changed on disk since treechat last wrote "
                             f"{'it' if len(plan.blocked) == 1 else 'them'}; --force overwrites (what it replaces "
                             "is kept for --undo)")
        if not todo:
            raise FilesError("nothing can be restored (see above)")
        if not args.yes and not _ask(f"Restore {len(todo)} file{'s' if len(todo) != 1 else ''}? [y/N] "):
            print("Nothing was changed." + ("" if sys.stdin.isatty() else " Add --yes to restore."))
            return 1
        done = await asyncio.to_thread(apply_restore, plan, o.history, o.journal, o.boundary, force=args.force)
        _report(done, said={s.shown for s in plan.refused})
        print("`treechat restore SESSION --undo` brings back what this replaced.")
        return 1 if done.skipped or done.refused else 0


def _ask(question: str) -> bool:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _report(outcome: Outcome, said: Collection[str] = ()) -> None:
    """What a restore or undo did (the refusals in `said` were told before it began)."""
    for shown in outcome.written:
        print(f"restored {_line(shown)}")
    for shown in outcome.removed:
        print(f"removed {_line(shown)}")
    for shown, why in outcome.skipped:
        print(f"treechat: kept {_line(shown)} as it is: {_line(why)}", file=sys.stderr)
    _refused([(shown, why) for shown, why in outcome.refused if shown not in said])


def _refused(refused: list[tuple[str, str]]) -> None:
    """One line each on stderr for the files a restore never touches."""
    for shown, why in refused:
        print(f"treechat: refused {_line(shown)}: {_line(why)}; a restore never writes it", file=sys.stderr)
