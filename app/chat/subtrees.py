"""Where a `task` call's sub-agent changes files (issue 39): parallel sub-agents do not collide.

The rule, per caller (the run whose reply made the calls):

- A sub-agent without edit, write or bash works with the caller's tools, in the caller's folder.
- The first sub-agent that can change files works in the caller's folder too, with the caller's
  tools (its checkpoints on the caller's branch), as a single one always did.
- One that starts while such a one goes in the caller's folder works in a git worktree of its
  own, made from the caller's folder as it is then (the checkout, or the caller's own worktree)
  by workspace/worktrees.py (no repository command run; recorded for the sweep after a kill -9).
  Its tools are made for that worktree (its checkpoints in its own session). When it ends,
  stopped or not, what it changed comes into the caller's folder (workspace/bring_back.py): a
  file changed there since it started is never overwritten (its result names it, with the diff
  to the sub-agent's version); the rest are written, each recorded as a checkpoint of the `task`
  call on the caller's branch (moving back before it offers to undo them). The worktree goes.
- Outside git such a second one is refused: the call's error result says why and to call it
  again when the first has ended.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treechat.agent.tools import BUILTIN_TOOLS
from treechat.agent.tools.changes import ProposedChange
from treechat.agent.tools.refused import RefusedTool
from treechat.agent.tools.task import TaskTool
from treechat.agent.tools.truncate import truncate_head
from treechat.agent.tools.workfolder import Boundary

if TYPE_CHECKING:
    from treechat.agent.tools.base import AnyTool
    from treechat.agent.types import JsonObject
    from treechat.chat.state import ChatState, Run
    from treechat.chat.workspace import Workspace
    from treechat.session.session import Session
    from treechat.workspace.bring_back import BackOutcome, Start
    from treechat.workspace.worktrees import Worktree

FILE_TOOLS = frozenset({"edit", "write", "bash"})
OUTSIDE_GIT = ("Refused: another sub-agent of this reply is changing files in this folder, which is not a git "
               "repository, so this one would race it; nothing was done. Call this task again once that one has "
               "ended (its result says so).")


def can_change_files(tools: list[AnyTool]) -> bool:
    return any(t.name in FILE_TOOLS and not isinstance(t, RefusedTool) for t in tools)


@dataclass(frozen=True)
class InWorktree:
    """A sub-agent's own worktree, made from its caller's folder, and its files at the start."""

    tree: Worktree
    start: Start
    caller: Run


class Subtrees:
    def __init__(self, s: ChatState, workspace: Workspace) -> None:
        self.s, self.workspace = s, workspace
        self._in_folder: dict[int, str] = {}  # id(caller's agent) → the call whose sub-agent changes files there
        # one sub-agent's changes come in at a time: two that changed one file from the same start
        # would each find it unchanged since, and the second would overwrite the first's
        self._bringing = asyncio.Lock()

    def claim_folder(self, caller: Run, call_id: str) -> bool:
        """The caller's folder for this call's sub-agent, when no other one changes files there
        (synchronous: two calls of one batch never both get it); `release` gives it back."""
        key = id(caller.agent)
        if key in self._in_folder:
            return False
        self._in_folder[key] = call_id
        return True

    def release(self, caller: Run, call_id: str) -> None:
        if self._in_folder.get(id(caller.agent)) == call_id:
            del self._in_folder[id(caller.agent)]

    def caller_folder(self, caller: Run) -> str:
        return caller.worktree.cwd if caller.worktree is not None else self.s.cwd

    async def make(self, caller: Run, call_id: str) -> InWorktree | str:
        """A worktree for this call's sub-agent, or why there is none (the call's error text)."""
        from treechat.workspace.bring_back import start_of
        from treechat.workspace.worktrees import WorktreeError, make_worktree, remove_worktree, root_of

        folder = self.caller_folder(caller)
        if await asyncio.to_thread(root_of, folder) is None:
            return OUTSIDE_GIT
        await self.workspace.swept()
        home, session_id = self.s.settings.home, self.s.session.session_id

        def made() -> InWorktree:
            tree = make_worktree(home, session_id, f"task-{call_id}", folder)
            try:
                return InWorktree(tree, start_of(tree), caller)
            except BaseException:
                remove_worktree(tree)
                raise

        try:
            return await asyncio.to_thread(made)
        except (WorktreeError, OSError) as err:
            return (f"The sub-agent was not started: another sub-agent of this reply changes files in this folder and "
                    f"no git worktree could be made for this one ({err}). Call it again once that one has ended.")

    async def tools_for(self, place: InWorktree, session: Session, tools: list[AnyTool]) -> list[AnyTool]:
        """The caller's tools (less task), the built-in ones made anew to work in the worktree."""
        from treechat.workspace.history import FileHistory
        from treechat.workspace.recorder import SessionRecorder
        from treechat.workspace.written import WrittenLog

        settings, cwd, tree = self.s.settings, place.tree.cwd, place.tree
        own = {t.name for t in place.caller.builtins if not isinstance(t, RefusedTool)} & set(BUILTIN_TOOLS)
        boundary = await asyncio.to_thread(Boundary.of, cwd, settings.writable_git_paths)
        recorder = SessionRecorder(session, FileHistory(), None, WrittenLog(settings.home), boundary, tree)
        made = self.s.built_in_tools([n for n in BUILTIN_TOOLS if n in own and n != TaskTool.name], cwd,
                                     approve=self._approve, recorder=recorder)
        by_name = {t.name: t for t in made}
        return [by_name.get(t.name, t) if t.name in own else t for t in tools]

    async def _approve(self, change: ProposedChange) -> bool | str:
        """The person's answer; the question names the file as the caller's folder's (the worktree
        is the sub-agent's scratch copy, its changes come in when it ends)."""
        from treechat.agent.tools.changes import NO_APPROVAL

        if self.s.approve_change is None:
            return NO_APPROVAL.format(what=f"{change.tool} of {change.path}")
        return await self.s.approve_change(change)

    async def finish(self, place: InWorktree, call_id: str) -> BackOutcome | str:
        """What the sub-agent changed brought into the caller's folder, each file recorded on the
        caller's branch; the worktree removed. A text: why nothing came in."""
        from treechat.workspace.bring_back import bring_back
        from treechat.workspace.worktrees import WorktreeError

        tree = place.tree
        try:
            boundary = await asyncio.to_thread(Boundary.of, self.caller_folder(place.caller),
                                               self.s.settings.writable_git_paths)
            async with self._bringing:
                outcome = await asyncio.to_thread(bring_back, tree, place.start, boundary)
        except (WorktreeError, OSError) as err:
            return f"its changes could not be looked at ({err}); none came into your folder"
        finally:
            await self.workspace.drop_worktree(tree)
        if outcome.came_in:
            caller = place.caller
            recorder = await self.workspace.file_recorder(caller.writer, caller.worktree)
            if recorder is not None:
                for b in outcome.came_in:
                    await recorder.record(TaskTool.name, call_id, b.path, b.before, b.after)
        return outcome


def report(outcome: BackOutcome | str) -> str:
    """What the calling model reads of the files, after the sub-agent's answer."""
    head = "[Files: this sub-agent worked in a git worktree of its own (another sub-agent was changing files here)"
    if isinstance(outcome, str):
        return f"{head}: {outcome}.]"
    lines = []
    came = [b.shown for b in outcome.came_in] + outcome.same
    if came:
        lines.append(f"Came into this folder: {', '.join(came)}.")
    else:
        lines.append("No file came into this folder." if outcome.kept or outcome.not_moved else "It changed no file.")
    if outcome.not_moved:
        lines.append("Not brought in: " + "; ".join(f"{p} ({why})" for p, why in outcome.not_moved) + ".")
    if outcome.kept:
        names = ", ".join(p for p, _ in outcome.kept)
        diffs, cut = truncate_head("\n".join(d for _, d in outcome.kept))
        lines.append(f"NOT brought in, changed in this folder since it started (the version here is kept): {names}. "
                     "To take what you want of its version, apply it from this diff (from the version here to "
                     f"its version):\n{diffs}" + ("\n[the diff was cut here]" if cut else ""))
    return f"{head}.]\n" + "\n".join(lines)


def details_of(outcome: BackOutcome | str) -> JsonObject:
    if isinstance(outcome, str):
        return {"worktree": True}
    return {"worktree": True, "broughtIn": [b.shown for b in outcome.came_in] + outcome.same,
            "keptYours": [p for p, _ in outcome.kept], "notBrought": [p for p, _ in outcome.not_moved]}


__all__ = ["OUTSIDE_GIT", "InWorktree", "Subtrees", "can_change_files", "details_of", "report"]
