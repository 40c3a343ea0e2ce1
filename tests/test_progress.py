"""Progress bars appear on a terminal only; pipes and files stay clean."""

import io

from treechat.progress import progress


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    out = io.StringIO()
    with progress("Importing", 100, unit="bytes", stream=out) as bar:
        bar.advance(50)
        bar.update(completed=100)
    assert out.getvalue() == ""


def test_a_terminal_gets_a_bar_with_count_and_rate() -> None:
    out = io.StringIO()
    with progress("Importing", 4, unit="sessions", stream=out, force=True) as bar:
        for _ in range(4):
            bar.advance()
    assert "Importing" in out.getvalue()


async def test_opening_the_store_shows_a_line_only_when_it_takes_long(tmp_path, monkeypatch) -> None:
    """The first open after an update migrates the database: seconds for a large one."""
    from treechat import bootstrap

    drawn = io.StringIO()
    monkeypatch.setattr(bootstrap, "progress", lambda *a, **kw: progress(*a, **kw, stream=drawn, force=True))
    catalog = await bootstrap.open_store("sqlite", tmp_path)  # quick: nothing drawn
    await catalog.close()
    assert drawn.getvalue() == ""
    monkeypatch.setattr(bootstrap, "SLOW_OPEN_S", 0.0)  # as if it took longer than the threshold
    catalog = await bootstrap.open_store("sqlite", tmp_path)
    assert len(await catalog.list()) == 0  # opened all the same
    await catalog.close()
    assert "Opening the database" in drawn.getvalue()


async def test_a_jsonl_listing_reports_the_files_it_reads_and_a_cached_one_draws_nothing(tmp_path) -> None:
    from treechat.progress import reading_progress
    from treechat.storage.jsonl import JsonlCatalog
    from treechat.storage.model import MessageEntry, UserMessage

    catalog = JsonlCatalog(tmp_path / "sessions")
    for k in range(3):
        s = await catalog.create(session_id=f"s{k}")
        await s.append_entry(MessageEntry(id=f"m{k}", parent_id=None, message=UserMessage(content="hi")))
    await catalog.close()
    (tmp_path / "sessions" / ".summaries.json").unlink()  # as after an import by another tool

    for expect_bar in (True, False):  # the first listing reads the files; the second is served from the cache
        catalog = JsonlCatalog(tmp_path / "sessions")
        drawn = io.StringIO()
        with reading_progress(catalog, "Reading sessions", stream=drawn, force=True):
            assert len(await catalog.list()) == 3
        await catalog.close()
        assert ("Reading sessions" in drawn.getvalue()) is expect_bar
        assert catalog.on_read is None
