"""Sessions: `/resume` (Ctrl+R: the list, where a session is also renamed and deleted), `/new`,
`/name`, `/fork` (and `f` in the tree or the transcript), `/session`, `/export`. Leaving a session
keeps what was typed as its draft (`TuiBase.leave_session`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..base import TuiBase
from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/starting.py)
    from treechat.widgets.screens import SessionsScreen
    from treechat.widgets.transcript.view import Transcript
    from treechat.widgets.tree.view import TreeView


class Sessions(TuiBase):
    @command("fork", title="Fork to a new session", args="[here|before]",
             help="a new session with this path (before: edit the last prompt there)",
             complete=lambda chat: ("here", "before"))
    async def cmd_fork(self, args: str) -> None:
        where = args or "here"
        if where not in ("here", "before"):
            self.show_error("Use /fork here (with the current reply) or /fork before (edit the last prompt).")
            return
        position: Literal["at", "before"] = "at" if where == "here" else "before"
        await self.leave_session(lambda text: self.chat.fork(None, position, composer_text=text))

    @command("resume", title="Sessions", help="list, resume, rename, delete sessions", key="Ctrl+R")
    async def cmd_resume(self, args: str) -> None:
        from treechat.widgets.screens import SessionsScreen

        rows = await self.chat.list_sessions()

        async def done(choice: object) -> None:
            if isinstance(choice, SessionsScreen.Resume):
                await self.leave_session(lambda text: self.chat.resume(choice.session_id, composer_text=text))
            elif isinstance(choice, SessionsScreen.New):
                await self.cmd_new("")

        self.push_screen(SessionsScreen(rows, current_id=self.chat.session_id), callback=done)

    @command("new", title="New session", help="start an empty session", key="Ctrl+N")
    async def cmd_new(self, args: str) -> None:
        await self.leave_session(lambda text: self.chat.new_session(composer_text=text))
        self.composer.focus()

    @command("name", title="Name this session", args="TEXT", help="the name shown in the header and the session list")
    async def cmd_name(self, args: str) -> None:
        await self.attempt(self.chat.rename(args))

    @command("export", title="Export this session", args="[PATH]",
             help=".jsonl opens in Pi, .md for reading, .html to look at and share (every branch)")
    async def cmd_export(self, args: str) -> None:
        """In a worker: a 100k-entry page takes seconds, and the App's own handler waiting for it
        would hold every key meanwhile (the keys go through the App's message queue)."""
        entries = (await self.chat.session.storage.get_session_stats()).entry_count
        if entries >= 5000:
            self.notify(f"Exporting {entries:,} entries… (you can keep working)", timeout=4)

        async def export() -> None:
            path = await self.attempt(self.chat.export(args or None))
            if path is not None:
                self.notify(f"Exported to {path}", timeout=6)

        self.run_worker(export(), group="export")

    @command("session", title="Session info", help="id, file, counts, tokens and cost")
    async def cmd_session(self, args: str) -> None:
        self.notify(await self.chat.info(), timeout=10)

    async def on_tree_view_fork_requested(self, message: TreeView.ForkRequested) -> None:
        await self.leave_session(lambda text: self.chat.fork(message.entry_id, "auto", composer_text=text))

    async def on_transcript_fork_requested(self, message: Transcript.ForkRequested) -> None:
        await self.leave_session(lambda text: self.chat.fork(message.entry_id, "auto", composer_text=text))

    async def on_sessions_screen_rename(self, message: SessionsScreen.Rename) -> None:
        await self.attempt(self.chat.rename(message.name, message.session_id))

    async def on_sessions_screen_delete(self, message: SessionsScreen.Delete) -> None:
        await self.attempt(self.chat.delete_session(message.session_id))
