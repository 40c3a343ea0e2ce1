"""A query made only of words under 3 characters (issue 26): no trigram can answer it, so SQLite
looks at the newest SHORT_SCAN entries only, newest first, and says so (SearchHits.searched);
a full scan of a 1M-entry archive took 5-11 s."""

from __future__ import annotations

import pytest

from treechat.cli.main import main
from treechat.storage.base import searched_only
from treechat.storage.sqlite import SqliteCatalog, search

from .helpers import append_all, user


@pytest.fixture
async def catalog(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "SHORT_SCAN", 10)
    cat = await SqliteCatalog.open(tmp_path / "treechat.db")
    s = await cat.create(session_id="old-one")
    await append_all(s, user("u0", None, "zz only in the oldest entry"),
                     *[user(f"u{i}", f"u{i - 1}", f"plain words {i}") for i in range(1, 30)])
    s2 = await cat.create(session_id="new-one")
    await append_all(s2, user("n0", None, "ok here"), user("n1", "n0", "and ok again"))
    yield cat
    await cat.close()


async def test_a_short_query_looks_at_the_newest_entries_and_says_so(catalog):
    hits = await catalog.search("zz")
    assert hits == [] and searched_only(hits) == 10  # the only match is 31 entries back
    assert [h.entry_id for h in await catalog.search("zz only")] == ["u0"]  # a 3+ word searches all
    hits = await catalog.search("ok")
    assert [h.entry_id for h in hits] == ["n1", "n0"] and searched_only(hits) == 10
    hits = await catalog.search("ok", limit=2)
    assert len(hits) == 2 and searched_only(hits) is None  # enough hits: nothing is missing


async def test_more_looks_at_the_next_older_entries_until_there_are_none(catalog):
    pages = [await catalog.search("zz")]
    while (searched := searched_only(pages[-1])) is not None:
        assert searched == 10 * len(pages)
        pages.append(await catalog.search("zz", further=searched))
    # 32 entries, 10 at a time: the oldest window holds the only match, and nothing is older
    assert len(pages) == 4 and [[h.entry_id for h in p] for p in pages] == [[], [], [], ["u0"]]
    hits = await catalog.search("plain", further=10)
    assert hits == [] and searched_only(hits) is None  # a 3+ word searched everything the first time
    hits = await catalog.search("ok", session_id="old-one", further=10)  # a session's own older entries
    assert hits == [] and searched_only(hits) == 20


async def test_a_short_query_whose_window_holds_everything_is_complete(catalog):
    hits = await catalog.search("ok", session_id="new-one")
    assert [h.entry_id for h in hits] == ["n1", "n0"] and searched_only(hits) is None
    hits = await catalog.search("zz session:old")  # the window is the newest 10 of that session
    assert hits == [] and searched_only(hits) == 10


def test_the_cli_says_how_far_a_short_query_looked(tmp_path, capsys, monkeypatch):
    import asyncio

    monkeypatch.setattr(search, "SHORT_SCAN", 10)

    async def seed() -> None:
        cat = await SqliteCatalog.open(tmp_path / "treechat.db")
        s = await cat.create(session_id="s")
        await append_all(s, *[user(f"u{i}", f"u{i - 1}" if i else None, f"words {i}") for i in range(20)])
        await cat.close()

    asyncio.run(seed())
    assert main(["--home", str(tmp_path), "search", "zz"]) == 0
    captured = capsys.readouterr()
    assert "No matches" in captured.out
    assert "newest 10 entries" in captured.err and "3 or more characters" in captured.err
