"""Other writers, live: what another process or machine writes shows here as it happens.

`follow_store` (the TUI runs it for as long as it is up) reads the store's change feed
(`SessionCatalog.watch()`: LISTEN/NOTIFY on PostgreSQL, `PRAGMA data_version` on SQLite, file
sizes on JSONL) and, when the open session changed, folds the new entries in (`poll_others`);
any change also emits `SessionsChanged`, so a sessions list on screen is read again.

An entry another writer appended right under our leaf, while we are idle and not previewing,
is adopted: it becomes our leaf and reaches the tree, the transcript and the status through the
very path our own appends take (`Session.adopt` → the controller's append observer). Two
terminals on one session thus stay on one conversation. Anything else (a branch elsewhere, or
entries arriving while our own reply runs) joins the tree where it hangs and the leaf stays.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from treechat.chat.events import EntryAppended, HeaderChanged, LabelChanged, Notice, SessionsChanged, StatusChanged
from treechat.storage.aggregates import tree_row
from treechat.storage.base import StorageError
from treechat.storage.model import LabelEntry, LeafEntry, SessionInfoEntry

if TYPE_CHECKING:
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.tree import ChatTree

FEED_WAIT_S = 1.0  # one wait on the feed; the loop wakes this often to stay cancellable
RETRY_S = 2.0  # after the feed failed (a damaged or vanished store): try again this much later
NOTICE_EVERY_S = 30.0  # "entries joined the tree elsewhere" once in a while, not for every message


class Live:
    def __init__(self, s: ChatState, *, shown: Shown, trees: ChatTree) -> None:
        self.s = s
        self.shown = shown
        self.trees = trees
    _noticed_at = -NOTICE_EVERY_S  # when "joined this session's tree" was last said

    async def follow_store(self) -> None:
        feed = self.s.catalog.watch()
        try:
            while True:
                try:
                    change = await feed.next_change(FEED_WAIT_S)
                except (StorageError, OSError):
                    await asyncio.sleep(RETRY_S)
                    continue
                if change is None:
                    continue
                if self.s.current is not None and change.touches(self.s.session.session_id):
                    await self.poll_others()
                self.s.emit(SessionsChanged())
        finally:
            await feed.close()

    async def poll_others(self) -> int:
        if self.s.current is None:
            return 0
        session = self.s.session
        try:
            found = await session.storage.poll_appended()
        except (StorageError, OSError):
            return 0  # a store gone bad says so on the next write; polling stays quiet
        if not found:
            return 0
        rows = {r.id: r for r in found.rows}
        count = elsewhere = 0
        for entry in found.entries:
            if isinstance(entry, LeafEntry):
                continue  # another writer's moves are its own: our leaf is ours
            count += 1
            row = rows.get(entry.id) or tree_row(entry)
            follow = (not self.s.is_running_here and self.s.preview_id is None and row.parent_id == session.leaf_id
                      and row.parent_id == entry.parent_id and entry.id not in self.s.tree)
            if follow:
                session.adopt(entry)  # → _on_append: tree, path state, transcript, header, status
                continue
            elsewhere += 1
            self.trees.grow(row)
            if self.s.files is not None:  # a checkpoint another process wrote: the file history knows it
                self.s.files.add_entry(entry)
            self.s.emit(EntryAppended(entry=entry, row=row, leaf_id=session.leaf_id, shown=False,
                                     siblings=self.shown.siblings(entry.id)))
            if isinstance(entry, LabelEntry):
                self.s.emit(LabelChanged(entry.target_id, entry.label, self.trees.relabel(entry.target_id, entry.label)))
            elif isinstance(entry, SessionInfoEntry):
                self.s.name = entry.name or None
        if elsewhere:
            self.s.emit(HeaderChanged())
            self.s.emit(StatusChanged())
            now = time.monotonic()
            if now - self._noticed_at >= NOTICE_EVERY_S:  # the tree shows the rest as it comes
                self._noticed_at = now
                self.s.emit(Notice(f"{elsewhere} {'entry' if elsewhere == 1 else 'entries'} from another process or "
                                  "machine joined this session's tree (your leaf stays where it is)."))
        return count
