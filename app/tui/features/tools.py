"""Tools: which of them the model may use. `/tools` opens the list (every built-in and MCP tool, on
or off: Space, Enter or a click turns one, closing keeps the choice); `/tools NAME on|off` does one
from the keyboard or the palette (Tab completes the names). The controller keeps the choice with
the session and tells the model at its next request (`Chat.set_tools`, chat/tool_set.py); the
status bar counts them, and the welcome (an empty session) names them and how to change them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on

from treechat.widgets.chrome.welcome import Welcome

from ..base import TuiBase, drawn
from ..messages import ChatMessage
from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/starting.py)
    from treechat.chat import Chat
    from treechat.chat.events import Status

USAGE = "/tools NAME on|off (NAME: a tool, or all); /tools alone lists them"


def tool_choices(chat: Chat) -> list[str]:
    """Tab after `/tools `: each tool with the word that changes it (`bash off`), then `all on|off`."""
    return [*(f"{t.name} {'off' if t.on else 'on'}" for t in chat.tools()), "all on", "all off"]


class Tools(TuiBase):
    @command("tools", title="Tools", args="[NAME on|off]", complete=tool_choices,
             help="the tools the model may use: read, ls, grep, bash, edit, write, MCP (kept with the session)")
    async def cmd_tools(self, args: str) -> None:
        words = args.split()
        if not words:
            self.open_tools()
            return
        if len(words) != 2 or words[1].lower() not in ("on", "off"):
            self.show_error(f"Which tool, on or off? {USAGE}.")
            return
        now = await self.attempt(self.chat.set_tool(words[0], words[1].lower() == "on"))
        if now is not None:
            self.notify(_tools_sentence(now, running=self.chat.is_running), timeout=4)

    def open_tools(self) -> None:
        from treechat.widgets.screens import ToolsDialog

        rows = [(t.name, t.description, t.on, t.builtin) for t in self.chat.tools()]

        async def done(names: list[str] | None) -> None:
            if names is None:
                return
            now = await self.attempt(self.chat.set_tools(names))
            if now is not None:
                self.notify(_tools_sentence(now, running=self.chat.is_running), timeout=4)

        self.push_screen(ToolsDialog(rows), callback=done)

    @on(ChatMessage)
    @drawn
    def _tools_for_welcome(self, message: ChatMessage) -> None:
        """The welcome names the tools an empty session starts with (ChatView draws the rest)."""
        from treechat.chat.events import ChatDelta, SessionOpened

        event = message.event
        status = event.status if isinstance(event, (ChatDelta, SessionOpened)) else None
        if status is not None:
            self._welcome_tools(status)

    def _welcome_tools(self, status: Status) -> None:
        from treechat.agent.tools import BUILTIN_TOOLS

        builtin = tuple(n for n in status.tools if n in BUILTIN_TOOLS)
        self.ui(Welcome).set_tools(builtin, len(status.tools) - len(builtin))


def _tools_sentence(names: list[str], *, running: bool) -> str:
    later = " (from the next message: this reply keeps the tools it started with)" if running else ""
    if not names:
        return f"No tools on: the model cannot look at files or run commands.{later}"
    return f"Tools on: {', '.join(names)}.{later}"
