"""What other processes write to the database, within a second: `PRAGMA data_version` polling.

`PRAGMA data_version` on a connection changes when any *other* connection commits to the file
(this process's own writes through the same connection do not change it), and reading it costs
microseconds. Every POLL_S the feed reads it; when it moved, one range read of the entries added
since names the sessions they belong to. Sessions created or deleted meanwhile have no new
entries: the change then names none (the list still refreshes).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time

from ..base import StoreChange
from .db import Database

POLL_S = 0.25


def _mark(c: sqlite3.Connection) -> tuple[int, int]:
    version = int(c.execute("PRAGMA data_version").fetchone()[0])
    top = c.execute("SELECT max(entry_seq) FROM session_entries").fetchone()[0]
    return version, int(top or 0)


def _changed_since(c: sqlite3.Connection, seq: int) -> list[str]:
    return [r[0] for r in c.execute("SELECT DISTINCT session_id FROM session_entries WHERE entry_seq > ?", (seq,))]


class SqliteChangeFeed:
    def __init__(self, db: Database, poll_s: float = POLL_S) -> None:
        self.db, self.poll_s = db, poll_s
        self._seen: tuple[int, int] | None = None
        self.closed = False

    async def next_change(self, timeout: float) -> StoreChange | None:  # noqa: ASYNC109  a poll in steps: None when it passes (a cancel could cut a read of the store)
        deadline = time.monotonic() + max(timeout, 0.0)
        if self._seen is None:
            self._seen = await self.db.run(_mark)
            return StoreChange(None)  # the first look: catch up with whatever came before it
        while not self.closed:
            version, top = await self.db.run(_mark)
            if version != self._seen[0]:
                ids = await self.db.run(_changed_since, self._seen[1]) if top != self._seen[1] else []
                self._seen = (version, top)
                return StoreChange(frozenset(ids))
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            await asyncio.sleep(min(self.poll_s, left))
        return None

    async def close(self) -> None:
        self.closed = True
