"""What the composer sends, and what waits to be sent.

A message goes to the controller (`Chat.send`: idle, a steer while a reply runs, or a follow-up);
the composer gets it back when it could not go (no model, no key, a file that cannot be attached).
A message that first asks a question (a file outside the working folder: the read question) is
sent from a worker, and those sent meanwhile follow it in order: this App's handler waiting for the
answer would hold the App's own queue, which must show the question and hear its key (shell.py).

Before the session is open, what is sent (or a slash command) is held and shown in the queue tray
as "sending"; it goes out the moment the session is open (startup/). The tray shows what waits:
those, then what the agent has queued (the view hands it in: `show_queue`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer

if TYPE_CHECKING:
    from treechat.chat.state import SendKind

    from ..shell import Shell

Request = Composer.Submitted | Composer.Command


class Sending:
    def __init__(self, shell: Shell, *, started: Callable[[], bool]) -> None:
        self.shell, self.started = shell, started  # started: the session is open (startup/)
        self.held: list[Request] = []  # sent before the session opened: they go out once it is
        self._asking_sends = 0  # messages waiting in a worker for a question's answer
        self._turns: asyncio.Lock | None = None  # they go out in the order they were sent

    # ------------------------------------------------------------ before the session is open

    def hold(self, request: Request) -> bool:
        """A message sent (or a command) before the session is open: kept, and shown as
        "sending", until it is; False once it is open."""
        if self.started():
            return False
        self.held.append(request)
        self.show_queue()
        return True

    def show_queue(self, queued: list[tuple[str, str]] | None = None) -> None:
        """The queue tray: what waits for the session to open ("sending"), then what the agent
        has queued (`queued`; None: what the tray shows now)."""
        tray = self.shell.ui(QueueTray)
        kept = queued if queued is not None else [item for item in tray.items if item[0] != "send"]
        tray.set_items([("send", r.text) for r in self.held] + kept)

    # ------------------------------------------------------------ sending

    async def submit(self, message: Composer.Submitted) -> None:
        """What the composer sent."""
        chat = self.shell.chat
        if message.kind == "send" and not chat.is_running:
            self.shell.questions.handed_over(message.time)  # what the agent asks next follows from this
        if chat.is_running and chat.preview_id is not None:
            self.shell.notify("Sent to the run on the other branch, not to the one on screen (Esc goes back to it).",
                              timeout=6)
        await self.send_text(message.text, message.kind)

    async def send_text(self, text: str, kind: SendKind, *, expand: bool = False) -> None:
        """Send `text` (a template or `/skill` expanded with `expand`); the composer gets it back
        when it was not sent."""
        if self._asking_sends or self.shell.chat.asks_before_sending(text, expand=expand):
            if self._turns is None:
                self._turns = asyncio.Lock()
            self._asking_sends += 1
            self.shell.run_worker(self._send_in_turn(text, kind, expand), group="send")
            return
        await self._send(text, kind, expand)

    async def _send_in_turn(self, text: str, kind: SendKind, expand: bool) -> None:
        assert self._turns is not None
        try:
            async with self._turns:
                await self._send(text, kind, expand)
        finally:
            self._asking_sends -= 1

    async def _send(self, text: str, kind: SendKind, expand: bool) -> None:
        if await self.shell.attempt(self.shell.chat.send(text, kind, expand=expand)) is None:
            self.shell.composer.give_back(text)  # not sent (no model, no key, a file that cannot be attached)

    # ------------------------------------------------------------ the queue

    async def pull_queued(self) -> None:
        """Alt+↑: the last queued message back into the composer, above what is typed there."""
        text = await self.shell.chat.pull_last_queued()
        if text is not None:
            composer = self.shell.composer
            current = composer.text.strip()
            composer.set_text(f"{text}\n{current}" if current else text)
            composer.focus()

    async def drop_queued(self, index: int) -> None:
        await self.shell.chat.drop_queued(index)
