"""The change feed (`SessionCatalog.watch()`), run against every backend: what another catalog
(another process, another machine) writes is reported, naming its session, within seconds."""

from __future__ import annotations

import time

from treechat.storage import open_catalog
from treechat.storage.base import ChangeFeed, StoreChange

from .helpers import append_all, assistant, user


async def _until(feed: ChangeFeed, session_id: str, seconds: float = 10.0) -> StoreChange:
    """The first change that names `session_id` (or any session), waiting at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        change = await feed.next_change(timeout=deadline - time.monotonic())
        if change is not None and change.session_ids is not None and session_id in change.session_ids:
            return change
    raise AssertionError(f"no change naming {session_id} within {seconds} s")


async def test_the_feed_reports_what_another_catalog_writes(catalog, tmp_path):
    feed = catalog.watch()
    assert isinstance(feed, ChangeFeed)
    try:
        if catalog.kind == "memory":  # nothing else can write to it: the feed never reports
            assert await feed.next_change(timeout=0.05) is None
            return
        first = await feed.next_change(timeout=5)
        assert first is not None and first.session_ids is None  # the first look: catch up
        assert first.touches("anything")
        assert await feed.next_change(timeout=0.3) is None  # then quiet while nothing changes
        other = await open_catalog(catalog.kind, tmp_path)
        try:
            s = await other.create(session_id="shared-feed", cwd="/w")
            await append_all(s, user("u1", None, "from elsewhere"), assistant("a1", "u1"))
            change = await _until(feed, "shared-feed")
            assert change.touches("shared-feed") and not change.touches("another-session")
            assert [e.id for e in await (await catalog.open("shared-feed")).get_entries()] == ["u1", "a1"]
            await other.delete("shared-feed")
            # a deletion is a change too (the list refreshes), whether or not it names the session
            assert await feed.next_change(timeout=10) is not None
        finally:
            await other.close()
    finally:
        await feed.close()
