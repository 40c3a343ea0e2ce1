"""SearchScreen (Ctrl+F): full-text search across sessions with live results.

``SearchScreen(search=None, query="")``. Results come either from ``search`` — an async
callable ``(query, further=0) -> list[SearchHit]`` the App provides (run in an exclusive worker,
debounced) — or, without it, the screen posts ``Query(text)`` on every edit and the App answers
with ``set_results(hits)``. A search that stopped early (a query of short words: the newest
entries only) ends with a "more…" row: choosing it asks ``search(query, further=N)`` for the next,
older entries and adds what they hold.

Each hit shows its session's name (else its first message; the id too where two share one), role and the snippet with the ``[[match]]`` highlighted. Ends with
``dismiss(SearchScreen.Chosen(hit))`` on Enter, or None on Escape.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from textual import events, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from treechat.storage.base import MAX_QUERY_CHARS, SearchHit, hit_labels, searched_only
from treechat.text.sanitize import sanitize_line

from ..keymap import bindings_for
from .base import Dialog


class Search(Protocol):
    async def __call__(self, query: str, further: int = 0) -> list[SearchHit]: ...


DEBOUNCE = 0.15
MORE = "more"  # the option id of the "more…" row
CUT_NOTE = f"only the first {MAX_QUERY_CHARS:,} characters are searched"


class QueryInput(Input):
    """The query box: at most MAX_QUERY_CHARS (typing stops there; a longer paste is cut to what
    fits, and the screen says so, rather than refused whole)."""

    cut = False

    def __init__(self, value: str, **kwargs: object) -> None:
        super().__init__(value[:MAX_QUERY_CHARS], max_length=MAX_QUERY_CHARS, **kwargs)  # type: ignore[arg-type]
        self.cut = len(value) > MAX_QUERY_CHARS

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()  # (Input's own paste handler, after this one, would refuse it whole)
        room = MAX_QUERY_CHARS - len(self.value) + (self.selection.end - self.selection.start if self.selection else 0)
        text = " ".join(event.text.splitlines())
        self.cut = len(text) > max(room, 0)
        self.replace(text[: max(room, 0)], *sorted(self.selection))
_MARK = re.compile(r"\[\[(.*?)\]\]")


def snippet_content(snippet: str) -> Content:
    """The snippet on one line with every ``[[match]]`` shown highlighted (brackets removed)."""
    text = sanitize_line(snippet, 300)
    parts: list[str | tuple[str, str]] = []
    last = 0
    for match in _MARK.finditer(text):
        parts.append(text[last : match.start()])
        parts.append((match.group(1), "bold reverse"))
        last = match.end()
    parts.append(text[last:])
    return Content.assemble(*parts)


@dataclass(frozen=True)
class HitChosen:
    """What ``SearchScreen`` is dismissed with (``SearchScreen.Chosen``): a hit was chosen."""

    hit: SearchHit
    """The hit (its session and entry)."""


class SearchScreen(Dialog[HitChosen]):
    BINDINGS = bindings_for("search")

    @dataclass
    class Query(Message):
        """Search for this (posted on every edit when the screen was given no search function)."""

        text: str
        """The query as typed."""

    Chosen: TypeAlias = HitChosen

    def __init__(self, search: Search | None = None, query: str = "") -> None:
        super().__init__()
        self.search = search
        self.initial_query = query
        self.hits: list[SearchHit] = []
        self.searched: int | None = None  # the newest entries looked at, when the search stopped early
        self._asked = ""  # the query the hits are for

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Search all sessions", id="title")
            yield QueryInput(self.initial_query, placeholder="words to find", id="query")
            yield OptionList(id="hits")
            yield Static("", classes="hint", id="count")

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()
        if self.initial_query:
            self._ask(self.initial_query[:MAX_QUERY_CHARS])

    def set_results(self, hits: list[SearchHit], *, more: bool = False) -> None:
        """The hits of the query (`more`: the next page of it, added after those shown)."""
        first_new = len(self.hits) if more else 0
        self.hits = [*self.hits, *hits] if more else list(hits)
        self.searched = searched_only(hits)
        options = self.query_one("#hits", OptionList)
        options.clear_options()
        for i, (hit, label) in enumerate(zip(self.hits, hit_labels(self.hits))):
            head = Content.assemble((sanitize_line(label, 60), "bold"), (f" · {hit.role or hit.type}", "dim"))
            options.add_option(Option(Content.assemble(head, "\n  ", snippet_content(hit.snippet)), id=str(i)))
        searched = self.searched
        if searched is not None:
            options.add_option(Option(Content.styled(f"more… (look further back than the newest {searched:,} entries)",
                                                     "italic"), id=MORE))
        if options.option_count:
            options.highlighted = min(first_new, options.option_count - 1)
        note = (f" in the newest {searched:,} entries (more…: further back; a word of 3+ characters searches them all)"
                if searched is not None else "")
        cut = f" · {CUT_NOTE}" if self.query_one("#query", QueryInput).cut else ""
        self.query_one("#count", Static).update(f"{len(self.hits)} hits{note}{cut} · Enter opens · Esc closes")

    def _ask(self, text: str) -> None:
        self._asked = text
        if self.search is None:
            self.post_message(self.Query(text))
        else:
            self._run_search(text)

    @work(exclusive=True, group="search")
    async def _run_search(self, text: str) -> None:
        await asyncio.sleep(DEBOUNCE)  # a newer keystroke cancels this worker first
        hits = await self.search(text) if text.strip() and self.search is not None else []
        self.set_results(hits)

    @work(exclusive=True, group="search")
    async def _search_further(self, text: str, further: int) -> None:
        if self.search is not None:
            hits = await self.search(text, further=further)
            if text == self._asked:  # (a worker of a newer query cancels this one anyway)
                self.set_results(hits, more=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._ask(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_choose()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def on_key(self, event: events.Key) -> None:
        self.steer_list_from_input(event, self.query_one("#hits", OptionList))

    def action_choose(self) -> None:
        options = self.query_one("#hits", OptionList)
        if options.highlighted is not None:
            self._choose(options.get_option_at_index(options.highlighted).id)

    def _choose(self, option_id: str | None) -> None:
        if option_id == MORE:
            if self.searched is not None:
                self._search_further(self._asked, self.searched)
        elif option_id is not None:
            self.dismiss(self.Chosen(self.hits[int(option_id)]))
