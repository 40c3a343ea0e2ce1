"""The controller's part for files: the checkpoints of the current session, restores, and the
offer to restore when the leaf moves (issue 23).

The workspace follows the leaf, never silently: after a move (a click in the tree, `/back`, a
sibling switch, edit and resend, a fork), if the tracked files at the new point differ from the
disk, a `RestoreOffered` event carries the plan; the front end asks (default No) and calls
`restore`. A file changed on disk since treechat last wrote it is only overwritten by a restore
with `force`; what a restore replaces is kept (`undo_restore`). A tracked path a restore never
touches (outside the working folder, in git's own folders, a link on its way: `Boundary`) is
named, once per session, and the rest proceeds without it.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, Literal

from treechat.agent.tools.changes import NO_APPROVAL, FileRecorder, ProposedChange
from treechat.agent.tools.workfolder import Boundary, working_folder
from treechat.chat.errors import ChatError
from treechat.chat.events import Notice, RestoreOffered

if TYPE_CHECKING:  # the workspace modules load on first use: the app's first frame does not wait for them
    from treechat.chat.state import ChatState
    from treechat.session.session import BranchWriter
    from treechat.workspace.history import FileHistory
    from treechat.workspace.journal import Journal
    from treechat.workspace.restore import Outcome, RestorePlan, UndoOutcome
    from treechat.workspace.worktrees import Worktree

class Where(Enum):
    LEAF = "the leaf"  # (None is a place too: before the first entry)


LEAF = Where.LEAF


def outcome_text(outcome: Outcome) -> str:
    """`Restored 2 files (notes.txt, a.py); removed b.txt. Kept as it is: c.txt (why). Never
    written: /etc/x.`"""
    parts = []
    if outcome.written:
        parts.append(f"Restored {_files(outcome.written)}")
    if outcome.removed:
        parts.append(f"removed {_files(outcome.removed)}")
    text = "; ".join(parts) + "." if parts else "No file was changed."
    text = text[0].upper() + text[1:]
    if outcome.skipped:
        kept = "; ".join(f"{shown} ({why})" for shown, why in outcome.skipped[:5])
        more = f" and {len(outcome.skipped) - 5} more" if len(outcome.skipped) > 5 else ""
        text += f" Kept as it is: {kept}{more}."
    if outcome.refused:  # (why: in the question that came before, or the notice once a session)
        names = ", ".join(shown for shown, _ in outcome.refused[:3])
        more = f" and {len(outcome.refused) - 3} more" if len(outcome.refused) > 3 else ""
        text += f" Never written: {names}{more}."
    return text


def refused_text(refused: list[tuple[str, str]]) -> str:
    """`Never written: /home/me/.bashrc (it is outside the working folder /work).`"""
    names = "; ".join(f"{shown} ({why})" for shown, why in refused[:5])
    more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
    return f"Never written: {names}{more}."


def _files(shown: list[str]) -> str:
    names = ", ".join(shown[:5]) + (f", … ({len(shown) - 5} more)" if len(shown) > 5 else "")
    return f"{len(shown)} file{'s' if len(shown) != 1 else ''} ({names})"


class Workspace:
    def __init__(self, s: ChatState) -> None:
        self.s = s
    _offer_task: asyncio.Task[None] | None = None
    _told_refused: frozenset[tuple[str, str]] = frozenset()  # (session, path) already named

    @property
    def boundary(self) -> Boundary:
        """Where a restore may write: the working folder (the repository root, or the folder
        treechat runs in), never git's own folders unless config.toml names the file."""
        return Boundary.of(self.s.cwd, self.s.settings.writable_git_paths)

    @property
    def folder(self) -> str:
        """The working folder: the repository root, or the folder treechat runs in."""
        return working_folder(self.s.cwd)

    async def file_history(self) -> FileHistory:
        if self.s.files is None:
            from treechat.workspace.history import FileHistory

            self.s.files = await FileHistory.load(self.s.session.storage)
        return self.s.files

    def journal(self) -> Journal:
        from treechat.workspace.journal import Journal

        return Journal(self.s.settings.home, self.s.session.session_id)

    async def file_recorder(self, writer: BranchWriter, worktree: Worktree | None = None) -> FileRecorder | None:
        """What edit, write and bash record their changes with: checkpoints on `writer`'s branch
        (made in `worktree`, named as the checkout's files)."""
        from treechat.workspace.recorder import SessionRecorder
        from treechat.workspace.written import WrittenLog

        history = await self.file_history()
        cwd = self.s.cwd if worktree is None else worktree.cwd
        boundary = await asyncio.to_thread(Boundary.of, cwd, self.s.settings.writable_git_paths)
        return SessionRecorder(writer, history, lambda: self.s.tree.path_ids(writer.tip),
                               WrittenLog(self.s.settings.home), boundary, worktree)

    # ------------------------------------------------------------ worktrees (issue 39)

    _sweeping: asyncio.Task[list[str]] | None = None

    def sweep_worktrees(self) -> None:
        """At the start: remove, in the background, the worktrees whose process is gone (kill -9)."""
        if self._sweeping is not None:
            return
        home = self.s.settings.home

        def sweep() -> list[str]:
            if not os.path.isdir(os.path.join(home, "worktrees")):
                return []  # (the usual case: nothing imported, nothing read)
            from treechat.workspace.worktrees import sweep_dead

            return sweep_dead(home)

        self._sweeping = asyncio.get_running_loop().create_task(asyncio.to_thread(sweep))

    async def swept(self) -> list[str]:
        """The worktrees the start's sweep removed (once it is done)."""
        return await self._sweeping if self._sweeping is not None else []

    async def make_worktree(self, run_id: str) -> Worktree:
        """A git worktree for run `run_id`, from the person's working state (ChatError: why not)."""
        from treechat.workspace.worktrees import WorktreeError, make_worktree

        await self.swept()  # (never two hands on one folder)
        try:
            return await asyncio.to_thread(make_worktree, self.s.settings.home, self.s.session.session_id, run_id,
                                           self.s.cwd)
        except WorktreeError as err:
            raise ChatError(f"No git worktree could be made for a second run that can change files ({err}); "
                            "nothing was sent.") from None

    async def drop_worktree(self, tree: Worktree) -> None:
        from treechat.workspace.worktrees import remove_worktree

        await asyncio.to_thread(remove_worktree, tree)

    async def approve(self, change: ProposedChange) -> bool | str:
        """The front end's answer, looked up when the tool asks (None: nothing can be approved)."""
        if self.s.approve_change is None:
            return NO_APPROVAL.format(what=f"{change.tool} of {change.path}")
        from treechat.agent.tools.workfolder import inside
        from treechat.workspace.worktrees import folder_of

        if inside(change.folder, await asyncio.to_thread(os.path.realpath, folder_of(self.s.settings.home))):
            change = replace(change, worktree=True)  # the question says so
        return await self.s.approve_change(change)

    # ------------------------------------------------------------ restoring

    async def restore_plan(self, entry_id: str | None | Literal[Where.LEAF] = LEAF) -> RestorePlan:
        target = self.s.session.leaf_id if entry_id is LEAF else entry_id
        if target is not None and self.s.tree.get(target) is None:
            raise ChatError(f"Entry {target} not found in this session.")
        from treechat.workspace.restore import plan_restore_async

        history = await self.file_history()
        boundary = await asyncio.to_thread(lambda: self.boundary)
        return await plan_restore_async(self.s.session.session_id, target, self.s.tree.path_ids(target), history,
                                        self.journal(), boundary)

    async def restore(self, plan: RestorePlan, *, force: bool = False) -> Outcome:
        from treechat.workspace.restore import apply_restore

        if plan.session_id != self.s.session.session_id:
            raise ChatError("That restore was for another session.")
        history = await self.file_history()
        try:
            outcome = await asyncio.to_thread(lambda: apply_restore(plan, history, self.journal(), self.boundary,
                                                                    force=force))
        except OSError as err:
            raise ChatError(f"The restore stopped: {err.strerror or err}. /restore --undo puts back what it "
                            "replaced.") from None
        text = outcome_text(outcome)
        if outcome.changed:
            text += " /restore --undo brings back what it replaced."
        self.s.emit(Notice(text, "warning" if outcome.skipped or outcome.refused else "information"))
        return outcome

    async def undo_restore(self, *, force: bool = False) -> UndoOutcome:
        from treechat.workspace.restore import undo_last

        history = await self.file_history()
        try:
            outcome = await asyncio.to_thread(lambda: undo_last(self.journal(), history, self.boundary, force=force))
        except OSError as err:
            raise ChatError(f"The undo stopped: {err.strerror or err}.") from None
        if outcome.nothing:
            raise ChatError("No restore to undo in this session.")
        if outcome.blocked and not force:
            raise ChatError(f"Not undone: {', '.join(outcome.blocked)} changed since the restore; "
                            "/restore --undo --force overwrites (what it overwrites is kept for the next undo).")
        self.s.emit(Notice("Undid the last restore: " + outcome_text(outcome),
                           "warning" if outcome.skipped or outcome.refused else "information"))
        return outcome

    # ------------------------------------------------------------ the offer after a move

    def offer_restore(self) -> None:
        """Look, in the background, whether the files at the leaf differ from the disk; offer it."""
        if self.s.files is not None and not self.s.files:
            return  # nothing tracked in this session: no look at all
        if self._offer_task is not None and not self._offer_task.done():
            self._offer_task.cancel()
        self._offer_task = asyncio.get_running_loop().create_task(self._offer(self.s.session.session_id, self.s.session.leaf_id))

    def close(self) -> None:
        if self._offer_task is not None:
            self._offer_task.cancel()  # nobody is left to be offered anything

    async def _offer(self, session_id: str, leaf: str | None) -> None:
        try:
            plan = await self.restore_plan(leaf)
        except Exception:  # noqa: BLE001  a look in passing, in a task nobody awaits: a store closing, a file vanishing says nothing
            return
        if self.s.current is None or self.s.session.session_id != session_id or self.s.session.leaf_id != leaf:
            return  # moved on meanwhile: that plan is for a place we left
        self._tell_refused(plan)
        if plan.ready:
            self.s.emit(RestoreOffered(plan))
        elif plan.blocked:
            names = ", ".join(s.shown for s in plan.blocked[:5])
            self.s.emit(Notice(f"{names} differs from this point but changed on disk since treechat last wrote it; "
                              "/restore --force puts it back as it was here (/restore --undo brings back what "
                              "that replaces).", "warning"))

    def _tell_refused(self, plan: RestorePlan) -> None:
        """Name, once per session, the tracked files a restore never writes (an imported or shared
        session's paths outside, git's own files): the offers that follow leave them out."""
        new = [s for s in plan.refused if (plan.session_id, s.path) not in self._told_refused]
        if not new:
            return
        self._told_refused = self._told_refused | {(plan.session_id, s.path) for s in new}
        self.s.emit(Notice("This session's checkpoints name files a restore never writes. "
                           + refused_text([(s.shown, s.refused) for s in new]), "warning"))
