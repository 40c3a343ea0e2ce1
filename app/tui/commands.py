"""The command palette (Ctrl+P): every slash command of the App's registry (`registry.py`), with
its argument hint, and the prompt templates found. A command chosen runs as if typed (the App's
`run_command`); a template goes into the composer, for its arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from treechat.widgets.commands import SlashCommand

if TYPE_CHECKING:
    from textual.worker import Worker

    from treechat.widgets.composer.view import Composer

    from .registry import Command


T = TypeVar("T")


@runtime_checkable
class Commands(Protocol):
    """What the palette reads of the App."""

    @property
    def slash_commands(self) -> Mapping[str, Command]: ...

    @property
    def composer(self) -> Composer: ...

    def command_table(self) -> list[SlashCommand]: ...

    async def run_command(self, name: str, args: str) -> None: ...

    def run_worker(self, work: Awaitable[T], name: str | None = "", group: str = "default") -> Worker[T]: ...


class TreechatCommands(Provider):
    """Command palette (Ctrl+P): every slash command, with its argument hint."""

    def _app(self) -> Commands:
        app = self.app
        assert isinstance(app, Commands)
        return app

    def _run(self, row: SlashCommand) -> Callable[[], None]:
        app = self._app()

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
        app = self._app()
        chat = getattr(app, "chat", None)  # (none before the session opens: app/tui/startup/)
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
