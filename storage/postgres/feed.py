"""What other machines write, as it happens: LISTEN treechat on a connection of its own.

Every write transaction ends with NOTIFY treechat '<session id>' (PostgreSQL delivers it at
COMMIT, to every listener of the database, on every machine). `next_change` waits for one,
then gathers what arrives in the next BURST_S (an import, a reply with its tool results) into
one StoreChange. The connection is its own (a pooled one would lose its LISTEN when handed
back); when it breaks the feed says "anything may have changed" (notifications sent meanwhile
are gone) and connects again, waiting longer between tries, at most RETRY_MAX_S. Every (re)connect
is reported as such a change: what was written before LISTEN began is caught up by one poll.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from ..base import StoreChange
from .db import Conn, PgDatabase
from .storage import CHANNEL

BURST_S = 0.05
RETRY_MAX_S = 30.0


class PgChangeFeed:
    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self._conn: Conn | None = None
        self._retry_s = 0.5
        self._next_try = 0.0
        self.closed = False

    async def _listen(self) -> Conn:
        conn = await psycopg.AsyncConnection.connect(self.db.conninfo, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            await conn.close()
            raise
        return conn

    async def next_change(self, timeout: float) -> StoreChange | None:  # noqa: ASYNC109  a poll in steps: None when it passes (a cancel could cut a read of the store)
        deadline = time.monotonic() + max(timeout, 0.0)
        if self.closed:
            await asyncio.sleep(max(timeout, 0.0))
            return None
        if self._conn is None:
            wait = self._next_try - time.monotonic()
            if wait > 0:
                await asyncio.sleep(min(wait, max(timeout, 0.0)))
                if time.monotonic() < self._next_try:
                    return None
            try:
                self._conn = await self._listen()
            except psycopg.Error:
                self._next_try = time.monotonic() + self._retry_s
                self._retry_s = min(self._retry_s * 2, RETRY_MAX_S)
                return None
            self._retry_s = 0.5
            # listening from now on; what was sent before (or during a break) is caught up by a poll
            return StoreChange(None)
        conn = self._conn
        ids: set[str] = set()
        try:
            async for note in conn.notifies(timeout=max(deadline - time.monotonic(), 0.0), stop_after=1):
                ids.add(note.payload)
            if not ids:
                return None
            async for note in conn.notifies(timeout=BURST_S):
                ids.add(note.payload)
        except psycopg.Error:
            await self._drop()
            return StoreChange(None)
        return StoreChange(frozenset(ids))

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except psycopg.Error:
                pass

    async def close(self) -> None:
        self.closed = True
        await self._drop()
