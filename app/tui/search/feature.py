"""Search: `/search [QUERY]` (Ctrl+F) looks through every session, on every branch; a hit chosen
moves there (the controller's `jump_to`; the view follows its `Focused` event)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:
    from treechat.storage.base import SearchHit

    from ..shell import Shell


class Search:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    @command("search", title="Search all sessions", args="[QUERY]", help="anything ever said, on any branch",
             key="Ctrl+F")
    async def cmd_search(self, args: str) -> None:
        self.shell.run_worker(self._search(args), group="dialog")

    async def _search(self, query: str) -> None:
        from treechat.widgets.screens import SearchScreen

        chat = self.shell.chat

        async def search(query: str, further: int = 0) -> list[SearchHit]:
            return await chat.catalog.search(query, limit=50, further=further)

        choice = await self.shell.ask(SearchScreen(search, query=query))
        if choice is not None:
            await self.show_hit(choice.hit)

    async def show_hit(self, hit: SearchHit) -> None:
        await self.shell.attempt(self.shell.chat.jump_to(hit))  # the view follows the Focused event
