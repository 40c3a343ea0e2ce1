"""Tools: which of them the model may use. `/tools` opens the list (every built-in and MCP tool, on
or off: Space, Enter or a click turns one, closing keeps the choice); `/tools NAME on|off` does one
from the keyboard or the palette (Tab completes the names). The controller keeps the choice with
the session and tells the model at its next request (`Chat.set_tools`, chat/tool_set.py); the
status bar counts them, and the welcome (an empty session) names them (view/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/startup/)
    from treechat.chat import Chat

    from ..shell import Shell

USAGE = "/tools NAME on|off (NAME: a tool, or all); /tools alone lists them"


def tool_choices(chat: Chat) -> list[str]:
    """Tab after `/tools `: each tool with the word that changes it (`bash off`), then `all on|off`."""
    return [*(f"{t.name} {'off' if t.on else 'on'}" for t in chat.tools()), "all on", "all off"]


class Tools:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    @command("tools", title="Tools", args="[NAME on|off]", complete=tool_choices,
             help="the tools the model may use: read, ls, grep, bash, edit, write, MCP (kept with the session)")
    async def cmd_tools(self, args: str) -> None:
        words = args.split()
        if not words:
            self.shell.run_worker(self._choose(), group="dialog")
            return
        if len(words) != 2 or words[1].lower() not in ("on", "off"):
            self.shell.show_error(f"Which tool, on or off? {USAGE}.")
            return
        chat = self.shell.chat
        now = await self.shell.attempt(chat.set_tool(words[0], words[1].lower() == "on"))
        if now is not None:
            self.shell.notify(_tools_sentence(now, running=chat.is_running), timeout=4)

    async def _choose(self) -> None:
        from treechat.widgets.screens import ToolsDialog

        chat = self.shell.chat
        rows = [(t.name, t.description, t.on, t.builtin) for t in chat.tools()]
        names = await self.shell.ask(ToolsDialog(rows))
        if names is None:
            return
        now = await self.shell.attempt(chat.set_tools(names))
        if now is not None:
            self.shell.notify(_tools_sentence(now, running=chat.is_running), timeout=4)


def _tools_sentence(names: list[str], *, running: bool) -> str:
    later = " (from the next message: this reply keeps the tools it started with)" if running else ""
    if not names:
        return f"No tools on: the model cannot look at files or run commands.{later}"
    return f"Tools on: {', '.join(names)}.{later}"
