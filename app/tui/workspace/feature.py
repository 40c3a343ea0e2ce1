"""The app's part for files (issue 23): approving an edit or write from its diff, the offer to
restore the files when the leaf moves, and `/restore`.

Every question is asked through the App's questions (app/tui/questions/: typing cannot answer
it; Enter alone refuses). "Allow edits for this session" covers edits and writes inside the working folder only:
one outside it is asked every time, with its own title; one in git's own folders never reaches a
question (the tool refuses it). A restore's question names the files it never writes.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:  # the App's first frame is drawn before these load (app/tui/startup/)
    from treechat.agent.tools.changes import ProposedChange
    from treechat.workspace.restore import RestorePlan

    from ..shell import Shell


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class Workspace:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.allowed_edits: set[str] = set()  # session ids where the user allowed edits for the session

    async def approve_change(self, change: ProposedChange) -> bool | str:
        """edit/write ask before they change a file: the diff, Apply / Refuse / allow for the session."""
        from treechat.widgets.question.panel import QuestionSpec

        session = self.shell.chat.session_id
        if not change.outside and session in self.allowed_edits:
            return True
        counts = f"+{change.added} \u2212{change.removed}"
        if change.outside:
            title = f"{'Create' if change.created else 'Change'} a file OUTSIDE the working folder: {change.real_path}?"
            note = (f"{change.real_path} is outside the working folder {change.folder}; allowing edits for the "
                    "session does not cover it.")
        elif change.created:
            title, note = f"Create {change.path} ({counts})?", ""
        else:
            title, note = f"Apply this {change.tool} to {change.path} ({counts})?", ""
        if change.worktree and not change.outside:
            note = ("In this run's own git worktree (another run changes files in your folder): your files stay "
                    "as they are until you pick this branch.")
        spec = QuestionSpec(title, diff=change.diff or "", note=note, yes="Apply", no="Refuse",
                            session=None if change.outside else "Allow edits for this session")
        answer = await self.shell.questions.ask(spec)
        if answer == "session":
            self.allowed_edits.add(session)
            return True
        return answer == "yes"

    # ------------------------------------------------------------ restoring

    def offered(self, plan: RestorePlan) -> None:
        """(The view's `RestoreOffered`) An offer is checked against where the chat is when it arrives."""
        if plan.session_id != self.shell.chat.session_id or plan.target_id != self.shell.chat.leaf_id or self.shell.chat.is_running_here:
            return  # stale: the leaf moved on, or a run started on this branch
        self.shell.run_worker(self._offer(plan, force=False), group="restore")

    async def _offer(self, plan: RestorePlan, *, force: bool) -> None:
        from treechat.widgets.question.panel import QuestionSpec

        steps = plan.ready + (plan.blocked if force else [])
        if not steps:
            self.shell.show_error(_nothing(plan, force))
            return
        notes = []
        if plan.blocked and not force:
            notes.append(f"Kept as they are: {', '.join(s.shown for s in plan.blocked)} (changed on disk since "
                         "treechat last wrote them; /restore --force overwrites).")
        elif plan.blocked:
            notes.append(f"Overwrites {', '.join(s.shown for s in plan.blocked)}, changed on disk since treechat "
                         "last wrote them (what it replaces is kept: /restore --undo).")
        if plan.unavailable:
            notes.append("Cannot restore: " + "; ".join(f"{s.shown} ({s.unavailable})" for s in plan.unavailable))
        if plan.refused:
            notes.append(_never(plan))
        title = f"Restore {_plural(len(steps), 'file')} to this point?"
        spec = QuestionSpec(title, diff=plan.diff_text(steps) or "", note=" ".join(notes), yes="Restore",
                            no="Keep the files", session=None,
                            keys="y restores them · n, Esc or Enter keeps the files as they are")
        if await self.shell.questions.ask(spec) == "yes":
            await self.shell.attempt(self.shell.chat.restore(plan, force=force))

    @command("restore", title="Restore files", args="[ENTRY] [--force] | --undo",
             help="put the files edit/write changed back as they were here (--undo: what the last restore replaced)",
             complete=lambda chat: ("--force", "--undo"))
    async def cmd_restore(self, args: str) -> None:
        """`/restore [ENTRY] [--force]`, `/restore --undo [--force]`."""
        from treechat.chat import ChatError

        try:
            words = shlex.split(args)
        except ValueError:
            words = args.split()
        force, undo = "--force" in words, "--undo" in words
        rest = [w for w in words if w not in ("--force", "--undo")]
        if undo:
            await self.shell.attempt(self.shell.chat.undo_restore(force=force))
            return
        if len(rest) > 1 or any(w.startswith("--") for w in rest):
            self.shell.show_error("/restore takes an entry id (default: this point), --force, or --undo.")
            return
        target = rest[0] if rest else None
        self.shell.questions.handed_over()  # asked for: the offer may be answered at once
        try:
            plan = await (self.shell.chat.restore_plan(target) if target else self.shell.chat.restore_plan())
        except ChatError as err:
            self.shell.show_error(str(err))
            return
        if not plan:
            files = await self.shell.chat.file_history()
            self.shell.notify("The tracked files are as they were at this point." if files else
                        "No tracked files: no edit or write has changed a file in this session.", timeout=5)
            return
        self.shell.run_worker(self._offer(plan, force=force), group="restore")


def _nothing(plan: RestorePlan, force: bool) -> str:
    if plan.blocked and not force:
        names = ", ".join(s.shown for s in plan.blocked)
        return (f"{names} changed on disk since treechat last wrote it; /restore --force puts it back as it was "
                "here (/restore --undo brings back what that replaces).")
    parts = []
    if plan.unavailable:
        parts.append("Cannot restore: " + "; ".join(f"{s.shown} ({s.unavailable})" for s in plan.unavailable) + ".")
    if plan.refused:
        parts.append(_never(plan))
    return " ".join(parts)


def _never(plan: RestorePlan) -> str:
    from treechat.chat.workspace import refused_text

    return refused_text([(s.shown, s.refused) for s in plan.refused])
