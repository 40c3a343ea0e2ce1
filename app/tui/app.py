"""The Textual App: a thin view over the controller.

It composes the widgets, subscribes to the controller (`treechat.chat.Chat`) and turns each of
its events into one Textual message (`messages.py`), handled in `chat_view.py`. Widgets' requests
(`requests.py`), keys (`keys.py`) and slash commands (`commands.py`) are controller calls. The
App owns no session state of its own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult, get_system_commands_provider
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from treechat.chat import Chat
from treechat.chat_events import ChatEvent
from treechat.storage.base import SessionStorage
from treechat.widgets.banner import Banner
from treechat.widgets.composer import Composer
from treechat.widgets.keymap import bindings_for
from treechat.widgets.queue_tray import QueueTray
from treechat.widgets.screens import ConfirmDialog
from treechat.widgets.session_header import SessionHeader
from treechat.widgets.status_bar import StatusBar
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView
from treechat.widgets.welcome import Welcome

from .chat_view import ChatView
from .commands import SlashCommands, TreechatCommands
from .keys import KeyActions
from .messages import message_for
from .requests import WidgetRequests
from .themes import ThemeSettings


class TreechatApp(ChatView, WidgetRequests, SlashCommands, KeyActions, ThemeSettings):
    CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles.tcss")
    TITLE = "treechat"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for("global")]
    COMMANDS = {get_system_commands_provider, TreechatCommands}

    def __init__(self, chat: Chat, storage: SessionStorage, *, detect_servers: bool = True) -> None:
        super().__init__()
        self.chat = chat
        self.first_storage = storage
        self.detect_servers = detect_servers
        self._unsubscribe = chat.subscribe(self._on_chat_event)
        chat.confirm = self.confirm_command

    def _on_chat_event(self, event: ChatEvent) -> None:
        self.post_message(message_for(event))

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                yield SessionHeader()
                yield Banner(id="banner")
                yield Welcome()
                yield Transcript()
                yield QueueTray()
                yield Composer()
            yield TreeView(id="tree")
        yield StatusBar()
        yield Footer()

    async def on_mount(self) -> None:
        self.apply_saved_theme()
        self.ui(Banner, "#banner").hide()
        await self.chat.open(self.first_storage)
        self.composer.focus()
        if self.detect_servers:
            self.run_worker(self._detect_local(), group="detect")

    def on_unmount(self) -> None:
        self.stop_listening()

    def stop_listening(self) -> None:
        self._unsubscribe()  # whatever the controller does while closing has nowhere to be drawn

    async def _detect_local(self) -> None:
        from treechat.llm.detect import detect_local_servers

        self.chat.add_local_servers(await detect_local_servers())

    async def confirm_command(self, command: str) -> bool:
        """The bash tool asks before it runs a command."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.push_screen(ConfirmDialog("Run this shell command?", command, yes="Run", no="Refuse"),
                         callback=lambda ok: None if future.done() else future.set_result(bool(ok)))
        return await future
