"""What the transcript asks for, and `/copy`, `/retry`: a sibling (‹ › or `[` `]`), a retry of a
reply, a copy of a message or a code block, a compaction card's originals. Each is a controller
call; the view follows the events. (Its edit is the tree's choose: tree/moves.py.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:
    from ..shell import Shell


class TranscriptActions:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    @command("copy", title="Copy a message", args="[N]",
             help="the last reply to the clipboard, or the N-th message from the end (OSC 52 and the system's)")
    async def cmd_copy(self, args: str) -> None:
        n: int | None = None
        if args.strip():
            if not args.strip().isdigit():
                self.shell.show_error("/copy takes the number of a message from the end (1 is the last), or nothing.")
                return
            n = int(args)
        text = await self.shell.attempt(self.shell.chat.copy_text(n))
        if text is not None:
            await self.shell.copy(text)

    @command("retry", title="Retry the last prompt",
             help="ask again; the new reply is a sibling of the old one (‹ n/m › switches)")
    async def cmd_retry(self, args: str) -> None:
        await self.shell.attempt(self.shell.chat.retry())

    async def switch_sibling(self, entry_id: str, delta: int) -> None:
        self.shell.questions.handed_over()
        await self.shell.attempt(self.shell.chat.switch_sibling(entry_id, delta))

    async def retry(self, entry_id: str) -> None:
        await self.shell.attempt(self.shell.chat.retry(entry_id))

    async def copy(self, text: str, what: str) -> None:
        await self.shell.copy(text, what)

    async def show_originals(self, entry_id: str) -> None:
        """A compaction card opened: the messages it replaced, dimmed under it."""
        from .items import dimmed

        entries = await self.shell.chat.compacted_away(entry_id)
        await self.shell.transcript.show_originals(entry_id, dimmed(entries))
