"""Slash commands and the command palette, both from the App's registry (`registry.py`).

`/name args` typed in the composer (or the palette entry) runs the handler registered as `name`
(`@command`, here and in the features: `extensions_view.py`, `workspace_view.py`,
`features/`); an unknown `/word` is never sent to the model: the text stays and the banner names
the closest command. Every handler is a thin call into the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from textual import on
from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from treechat.widgets.commands import SlashCommand, closest
from treechat.widgets.composer.view import Composer

from .base import TuiBase

# The dialogs (treechat.widgets.screens) are imported by the commands that open them: they load
# after the first frame (app/tui/starting.py).


class TreechatCommands(Provider):
    """Command palette (Ctrl+P): every slash command, with its argument hint."""

    def _run(self, row: SlashCommand) -> Callable[[], None]:
        app = self.app
        assert isinstance(app, SlashCommands)

        def run() -> None:  # the coroutine is made only when the command is chosen
            if row.name not in app.slash_commands:  # a prompt template: into the composer, for its arguments
                app.composer.set_text(f"/{row.name} ")
                app.composer.focus()
                return
            app.run_worker(app.run_command(row.name, ""), group="command")

        return run

    @staticmethod
    def _help(row: SlashCommand) -> str:
        # the palette reads help as markup: "[instructions]" would vanish as an unknown style tag, and
        # Textual's escape() leaves "[TEXT]" and "[instructions]" as they are (it took "/label [TEXT]"
        # to "/label "): every "[" is escaped
        key = f" ({row.key})" if row.key else ""
        return f"{row.usage}: {row.help}{key}".replace("[", "\\[")

    def _commands(self) -> list[SlashCommand]:
        app = self.app
        assert isinstance(app, SlashCommands)
        chat = getattr(app, "chat", None)  # (none before the session opens: app/tui/starting.py)
        return [*app.command_table(), *(chat.command_rows() if chat is not None else [])]  # and the templates found

    async def discover(self) -> Hits:
        for row in self._commands():
            yield DiscoveryHit(row.title, self._run(row), help=self._help(row))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for row in self._commands():
            score = max(matcher.match(row.title), matcher.match("/" + row.name))
            if score > 0:
                yield Hit(score, matcher.highlight(row.title), self._run(row), help=self._help(row))


class SlashCommands(TuiBase):
    @on(Composer.Command)
    async def _composer_command(self, message: Composer.Command) -> None:
        self.clear_error()
        if not self.hold_request(message):  # before the session opens it waits (app/tui/starting.py)
            await self.typed_command(message)

    async def typed_command(self, message: Composer.Command) -> None:
        if await self.extensions.send_expanded(message.name, message.args, message.text, message.kind):  # a template, /skill NAME
            return
        if not await self.run_slash(message.name, message.args):
            self.composer.give_back(message.text)

    async def run_slash(self, name: str, args: str) -> bool:
        """A command typed in the composer; False (and a sentence) for one we do not know."""
        if name not in self.slash_commands:
            guess = closest(name, list(self.slash_commands))
            hint = f" Did you mean /{guess}?" if guess else " /help lists them; start with // to send a literal /."
            self.show_error(f"Unknown command /{name}.{hint}")
            return False
        await self.run_command(name, args)
        return True

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's own palette commands (theme, keys, screenshot, …), our quit instead of its own
        (ours keeps what was typed as a draft and asks while a reply runs)."""
        for system in super().get_system_commands(screen):
            if system.title.lower() != "quit":
                yield system
        yield SystemCommand("Quit", "Quit treechat (what you typed is kept as a draft)", self.action_quit)
