"""Sessions: `/resume` (Ctrl+R: the list, where a session is also renamed and deleted), `/new`,
`/name`, `/fork` (and `f` in the tree or the transcript), `/session`, `/export`. Leaving a session
keeps what was typed as its draft (`leave_session`); an open list is read again when another
writer changed the store (`changed`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/startup/)
    from treechat.widgets.screens import SessionsScreen

    from ..shell import Shell


class Sessions:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self._listed: SessionsScreen | None = None  # the sessions list, while it is open

    @command("fork", title="Fork to a new session", args="[here|before]",
             help="a new session with this path (before: edit the last prompt there)",
             complete=lambda chat: ("here", "before"))
    async def cmd_fork(self, args: str) -> None:
        where = args or "here"
        if where not in ("here", "before"):
            self.shell.show_error("Use /fork here (with the current reply) or /fork before (edit the last prompt).")
            return
        position: Literal["at", "before"] = "at" if where == "here" else "before"
        chat = self.shell.chat
        await self.leave_session(lambda text: chat.fork(None, position, composer_text=text))

    @command("resume", title="Sessions", help="list, resume, rename, delete sessions", key="Ctrl+R")
    async def cmd_resume(self, args: str) -> None:
        from treechat.widgets.screens import SessionsScreen

        chat = self.shell.chat
        rows = await chat.list_sessions()
        self._listed = SessionsScreen(rows, current_id=chat.session_id)
        self.shell.run_worker(self._resume(self._listed), group="dialog")

    async def _resume(self, listed: SessionsScreen) -> None:
        from treechat.widgets.screens import SessionsScreen

        try:
            choice = await self.shell.ask(listed)
        finally:
            if self._listed is listed:
                self._listed = None
        chat = self.shell.chat
        if isinstance(choice, SessionsScreen.Resume):
            session_id = choice.session_id
            await self.leave_session(lambda text: chat.resume(session_id, composer_text=text))
        elif isinstance(choice, SessionsScreen.New):
            await self.cmd_new("")

    @command("new", title="New session", help="start an empty session", key="Ctrl+N")
    async def cmd_new(self, args: str) -> None:
        chat = self.shell.chat
        await self.leave_session(lambda text: chat.new_session(composer_text=text))
        self.shell.composer.focus()

    @command("name", title="Name this session", args="TEXT", help="the name shown in the header and the session list")
    async def cmd_name(self, args: str) -> None:
        await self.shell.attempt(self.shell.chat.rename(args))

    @command("export", title="Export this session", args="[PATH]",
             help=".jsonl opens in Pi, .md for reading, .html to look at and share (every branch)")
    async def cmd_export(self, args: str) -> None:
        """In a worker: a 100k-entry page takes seconds, and the App's own handler waiting for it
        would hold every key meanwhile (the keys go through the App's message queue)."""
        chat = self.shell.chat
        entries = (await chat.session.storage.get_session_stats()).entry_count
        if entries >= 5000:
            self.shell.notify(f"Exporting {entries:,} entries… (you can keep working)", timeout=4)

        async def export() -> None:
            path = await self.shell.attempt(chat.export(args or None))
            if path is not None:
                self.shell.notify(f"Exported to {path}", timeout=6)

        self.shell.run_worker(export(), group="export")

    @command("session", title="Session info", help="id, file, counts, tokens and cost")
    async def cmd_session(self, args: str) -> None:
        self.shell.notify(await self.shell.chat.info(), timeout=10)

    # ------------------------------------------------------------ from the widgets

    async def fork_at(self, entry_id: str) -> None:
        """`f` in the tree or the transcript: a new session with the path to `entry_id`."""
        chat = self.shell.chat
        await self.leave_session(lambda text: chat.fork(entry_id, "auto", composer_text=text))

    async def rename(self, session_id: str, name: str) -> None:
        """Renamed in the sessions list."""
        await self.shell.attempt(self.shell.chat.rename(name, session_id))

    async def delete(self, session_id: str) -> None:
        """Deleted in the sessions list."""
        await self.shell.attempt(self.shell.chat.delete_session(session_id))

    async def changed(self) -> None:
        """Another writer changed the store: an open sessions list is read again."""
        listed = self._listed
        if listed is not None and listed.is_attached:
            listed.set_sessions(await self.shell.chat.list_sessions())

    async def leave_session(self, switch: Callable[[str], Awaitable[object]]) -> None:
        """A call that opens another session: what is typed goes with the one we leave, as its
        draft (the controller keeps it). On an error nothing moved, so the text comes back."""
        from treechat.chat import ChatError
        from treechat.storage.base import StorageError

        composer = self.shell.composer
        text = composer.text
        composer.load_text("")
        try:
            await switch(text)
        except (ChatError, StorageError) as err:
            if not composer.text:
                composer.load_text(text)
            self.shell.show_error(str(err))
