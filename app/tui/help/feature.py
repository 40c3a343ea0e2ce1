"""Help: F1 and `/help` show the keys (the keymap), the slash commands (the registry) and what was
found at run time (prompt templates, skills). Last among the App's features, so `/help` is the last
command listed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..registry import command

if TYPE_CHECKING:
    from ..shell import Shell


class FoundHelp(Protocol):
    def extensions_help(self) -> str:
        """F1's part about the templates and skills found (extensions/)."""
        ...


class Help:
    def __init__(self, shell: Shell, found: FoundHelp) -> None:
        self.shell, self.found = shell, found

    @command("help", title="Help: keys and commands", help="every key binding", key="F1")
    async def cmd_help(self, args: str) -> None:
        from treechat.widgets.screens import HelpScreen

        self.shell.show(HelpScreen(extra=self.found.extensions_help(), commands=self.shell.command_table()))
