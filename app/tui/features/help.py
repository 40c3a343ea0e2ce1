"""Help: F1 and `/help` show the keys (the keymap), the slash commands (the registry) and what was
found at run time (prompt templates, skills). Last among the App's features, so `/help` is the last
command listed."""

from __future__ import annotations

from ..base import TuiBase
from ..registry import command


class Help(TuiBase):
    @command("help", title="Help: keys and commands", help="every key binding", key="F1")
    async def cmd_help(self, args: str) -> None:
        from treechat.widgets.screens import HelpScreen

        self.push_screen(HelpScreen(extra=self.extensions_help(), commands=self.command_table()))
