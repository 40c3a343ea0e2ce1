from datetime import UTC, datetime
from typing import Any

from textual.widgets import OptionList

from treechat.storage.base import SearchHit, SessionSummary, threaded
from treechat.widgets.keymap import KEYMAP, help_markdown
from treechat.widgets.screens import (
    ConfirmDialog,
    HelpScreen,
    LabelDialog,
    ModelChoice,
    ModelGroup,
    ModelPicker,
    SearchScreen,
    SessionsScreen,
    ThinkingPicker,
)
from treechat.widgets.screens.search import snippet_content

from .helpers import Host, screen_text, wait_for

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def summary(sid: str, name: str | None, parent: str | None = None, msgs: int = 4, cost: float = 0.5) -> SessionSummary:
    return SessionSummary(sid, "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", name=name, message_count=msgs,
                          cost_total=cost, first_message=f"first of {sid}", parent_session_id=parent)


SESSIONS = [summary("s3", "refactor-auth ⑂ 2", parent="s1"), summary("s2", None), summary("s1", "refactor-auth")]


def test_forks_are_listed_under_their_parent():
    assert [(s.id, d) for s, d in threaded(SESSIONS)] == [("s2", 0), ("s1", 0), ("s3", 1)]


async def test_sessions_screen_resume_filter_rename_delete():
    app = Host()
    results: list[Any] = []
    async with app.run(size=(100, 30)) as pilot:
        screen = SessionsScreen(SESSIONS, current_id="s1", now=NOW)
        app.push_screen(screen, results.append)
        await pilot.pause()
        text = screen_text(app)
        assert "refactor-auth" in text and "1h ago · 4 msgs · $0.50" in text and "first of s2" in text
        await pilot.press(*"auth")
        assert screen.query_one("#sessions", OptionList).option_count == 2
        await pilot.press("down", "tab")  # to the list: now n/r/d are commands
        assert screen.selected_id == "s3"
        await pilot.press("r", *" x", "enter")
        await pilot.pause()
        assert [(m.session_id, m.name) for m in app.posted(SessionsScreen.Rename)] == [("s3", "refactor-auth ⑂ 2 x")]
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert [m.session_id for m in app.posted(SessionsScreen.Delete)] == ["s3"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(results[0], SessionsScreen.Resume) and results[0].session_id == "s1"


async def test_sessions_screen_new_and_escape():
    app = Host()
    results: list[Any] = []
    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(SessionsScreen(SESSIONS, now=NOW), results.append)
        await pilot.pause()
        await pilot.press("ctrl+n")
        app.push_screen(SessionsScreen(SESSIONS, now=NOW), results.append)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(results[0], SessionsScreen.New) and results[1] is None


def test_snippet_highlight_drops_markers_and_escapes():
    content = snippet_content("before [[match]] after \x1b[2J")
    assert content.plain == "before match after"
    assert any(content.plain[s.start:s.end] == "match" for s in content.spans)


HITS = [
    SearchHit("s1", "e1", "message", "user", "how do I [[rebase]] safely", 1.0, session_name="git help",
              session_title="git help"),
    SearchHit("s2", "e9", "message", "assistant", "use [[rebase]] -i", 2.0, session_name=None,
              session_title="how do I undo a commit"),  # no name: its first message
]


async def test_search_screen_with_callback():
    app = Host()
    results: list[Any] = []
    asked: list[str] = []

    async def search(query: str, further: int = 0) -> list[SearchHit]:
        asked.append(query)
        return HITS

    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(SearchScreen(search), results.append)
        await pilot.pause()
        await pilot.press(*"rebase")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert asked == ["rebase"]  # debounced: one query for six keystrokes
        text = screen_text(app)
        assert "git help · user" in text and "how do I rebase safely" in text and "[[" not in text
        assert "how do I undo a commit · assistant" in text and "s2" not in text  # a title, not an id
        await pilot.press("down", "enter")
        await pilot.pause()
        assert results[0].hit.entry_id == "e9"


async def test_search_screen_with_messages():
    app = Host()
    results: list[Any] = []
    async with app.run(size=(100, 30)) as pilot:
        screen = SearchScreen()
        app.push_screen(screen, results.append)
        await pilot.pause()
        await pilot.press(*"re")
        await pilot.pause()
        assert [m.text for m in app.posted(SearchScreen.Query)] == ["r", "re"]
        screen.set_results(HITS[:1])
        await pilot.press("enter")
        await pilot.pause()
        assert results[0].hit.entry_id == "e1"


async def test_pickers_and_dialogs():
    app = Host()
    results: list[Any] = []
    async with app.run(size=(100, 30)) as pilot:
        groups = [ModelGroup("openai", (ModelChoice("openai/gpt-4o"),)),
                  ModelGroup("anthropic", (ModelChoice("anthropic/claude"),), problem="no key: set ANTHROPIC_API_KEY"),
                  ModelGroup("ollama", (ModelChoice("ollama/llama3"),))]
        app.push_screen(ModelPicker(groups), results.append)
        await pilot.pause()
        assert "no key: set ANTHROPIC_API_KEY" in screen_text(app)
        await pilot.press(*"llama", "enter")
        app.push_screen(ThinkingPicker("low"), results.append)
        await pilot.pause()
        await pilot.press("down", "enter")
        app.push_screen(LabelDialog("old", target="user: hi"), results.append)
        await pilot.pause()
        await pilot.press("ctrl+u", *"plan-b", "enter")
        app.push_screen(ConfirmDialog("Run this command?", "rm -rf /tmp/x\x1b]52;c;AAAA\x07"), results.append)
        await pilot.pause()
        assert "\x1b" not in screen_text(app) and "rm -rf /tmp/x" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert results == ["ollama/llama3", "medium", "plan-b", False]


async def test_help_screen_is_generated_from_the_keymap():
    app = Host()
    async with app.run(size=(100, 60)) as pilot:
        app.push_screen(HelpScreen())
        assert await wait_for(pilot, lambda: "F2 / Ctrl+B" in screen_text(app))
    markdown = help_markdown()
    for key in KEYMAP:
        assert key.description in markdown


async def test_search_screen_says_when_a_short_query_looked_at_the_newest_entries_only():
    from treechat.storage.base import SearchHits

    capped = SearchHits(HITS[:1])
    capped.searched = 25_000
    app = Host()
    async with app.run(size=(120, 30)) as pilot:
        screen = SearchScreen()
        app.push_screen(screen)
        await pilot.pause()
        screen.set_results(capped)
        await pilot.pause()
        text = screen_text(app)
        assert "1 hits in the newest 25,000 entries" in text and "more…" in text
        screen.set_results(HITS[:1])  # a plain list: everything was searched
        await pilot.pause()
        assert "newest" not in screen_text(app)


async def test_more_in_the_search_screen_adds_the_hits_of_older_entries(tmp_path, monkeypatch):
    """A two-letter query looked at the newest entries only: choosing "more…" asks the store for
    the next, older ones (a real SQLite store, its window made 10 entries) until none are left."""
    from tests.storage.helpers import append_all, user
    from treechat.storage.sqlite import SqliteCatalog, search

    monkeypatch.setattr(search, "SHORT_SCAN", 10)
    catalog = await SqliteCatalog.open(tmp_path / "treechat.db")
    s = await catalog.create(session_id="long")
    await append_all(s, user("u0", None, "zz at the very start"),
                     *[user(f"u{i}", f"u{i - 1}", f"zz {i}" if i == 12 else f"words {i}") for i in range(1, 25)])
    results: list[Any] = []

    async def find(query: str, further: int = 0) -> list[SearchHit]:
        return await catalog.search(query, further=further)

    app = Host()
    try:
        async with app.run(size=(120, 30)) as pilot:
            screen = SearchScreen(find)
            app.push_screen(screen, results.append)
            await pilot.pause()
            await pilot.press("z", "z")
            assert await wait_for(pilot, lambda: "more… (look further back than the newest 10 entries)"
                                  in screen_text(app))
            assert screen.hits == []
            await pilot.press("enter")  # the highlighted row is "more…"
            assert await wait_for(pilot, lambda: [h.entry_id for h in screen.hits] == ["u12"])
            assert "newest 20 entries" in screen_text(app)
            await pilot.press("down", "enter")  # past the hit, "more…" again: the oldest entries
            assert await wait_for(pilot, lambda: [h.entry_id for h in screen.hits] == ["u12", "u0"])
            assert await wait_for(pilot, lambda: "more…" not in screen_text(app))  # nothing older is left
            await pilot.press("enter")  # the first new hit is highlighted
            assert await wait_for(pilot, lambda: bool(results))
            assert results[0].hit.entry_id == "u0"
    finally:
        await catalog.close()
