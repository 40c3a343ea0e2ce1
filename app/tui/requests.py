"""What the widgets ask for (their messages), turned into controller calls.

Widgets post requests (choose this node, preview that, drop a queued message); these handlers
call the controller and leave every screen update to the events it emits. A feature's own
requests are handled with its command in `features/` (labels: `features/labels.py`).

The messages of the widgets in the first frame are handled with `@on`; those of the tree, the
transcript and the dialogs, whose modules load after it (app/tui/starting.py), by Textual's
handler names (`on_tree_view_node_chosen` for `TreeView.NodeChosen`; tests/tui/test_start.py
checks that each name is a real message's).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import on

from treechat.widgets.chrome.banner import Banner
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer

from .base import TuiBase

if TYPE_CHECKING:
    from treechat.chat.state import SendKind


class WidgetRequests(TuiBase):
    _asking_sends = 0  # messages waiting in a worker for a question's answer (send_text)
    _send_turns: asyncio.Lock | None = None  # they go out in the order they were sent

    # ------------------------------------------------------------ the composer

    @on(Composer.Submitted)
    async def _submitted(self, message: Composer.Submitted) -> None:
        self.clear_error()
        if not self.hold_request(message):  # before the session opens it waits (app/tui/starting.py)
            await self.submit(message)

    async def submit(self, message: Composer.Submitted) -> None:
        kind: SendKind = "follow_up" if message.kind == "follow_up" else "steer" if message.kind == "steer" else "send"
        if kind == "send" and not self.chat.is_running:
            self.questions.handed_over(message.time)  # what the agent asks next follows from this
        if self.chat.is_running and self.chat.preview_id is not None:
            self.notify("Sent to the run on the other branch, not to the one on screen (Esc goes back to it).",
                        timeout=6)
        await self.send_text(message.text, kind)

    async def send_text(self, text: str, kind: SendKind, *, expand: bool = False) -> None:
        # A message that first asks a question (a file outside the working folder: the read
        # question) is sent from a worker: this handler waiting for the answer would hold the
        # App's own loop, which must show the dialog and hear the key. Those sent meanwhile
        # follow it, in order.
        if self._asking_sends or self.chat.asks_before_sending(text, expand=expand):
            if self._send_turns is None:
                self._send_turns = asyncio.Lock()
            self._asking_sends += 1
            self.run_worker(self._send_in_turn(text, kind, expand), group="send")
            return
        if await self.attempt(self.chat.send(text, kind, expand=expand)) is None:
            self.composer.give_back(text)  # not sent (no model, no key, a file that cannot be attached)

    async def _send_in_turn(self, text: str, kind: SendKind, expand: bool) -> None:
        assert self._send_turns is not None
        try:
            async with self._send_turns:
                if await self.attempt(self.chat.send(text, kind, expand=expand)) is None:
                    self.composer.give_back(text)
        finally:
            self._asking_sends -= 1

    # ------------------------------------------------------------ the queue, the banner

    @on(QueueTray.Dropped)
    async def _queue_dropped(self, message: QueueTray.Dropped) -> None:
        await self.chat.drop_queued(message.index)

    @on(QueueTray.PullLast)
    async def _queue_pull_last(self, message: QueueTray.PullLast) -> None:
        await self.pull_queued()

    @on(Banner.Dismissed)
    def _banner_dismissed(self, message: Banner.Dismissed) -> None:
        self.composer.focus()
