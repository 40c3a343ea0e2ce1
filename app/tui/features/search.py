"""Search: `/search [QUERY]` (Ctrl+F) looks through every session, on every branch; a hit chosen
moves there (the controller's `jump_to`; the view follows its `Focused` event)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import TuiBase
from ..registry import command

if TYPE_CHECKING:
    from treechat.storage.base import SearchHit


class Search(TuiBase):
    @command("search", title="Search all sessions", args="[QUERY]", help="anything ever said, on any branch",
             key="Ctrl+F")
    async def cmd_search(self, args: str) -> None:
        from treechat.widgets.screens import SearchScreen

        async def search(query: str, further: int = 0) -> list[SearchHit]:
            return await self.chat.catalog.search(query, limit=50, further=further)

        async def done(choice: object) -> None:
            if isinstance(choice, SearchScreen.Chosen):
                await self.show_hit(choice.hit)

        self.push_screen(SearchScreen(search, query=args), callback=done)

    async def show_hit(self, hit: SearchHit) -> None:
        await self.attempt(self.chat.jump_to(hit))  # the view follows the Focused event
