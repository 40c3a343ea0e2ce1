"""The session's tree in the controller: read whole, or for a big session its path first.

Reading the whole tree of a 1M-entry session takes seconds (SQLite's part is C, but it is a scan
of every entry); nothing on the first screen needs more than the path to the leaf. So a session of
`LOAD_LATER` entries or more opens with a tree of its path (`get_path_rows`: milliseconds), and its
whole tree is read once the front end has drawn that (`Chat.load_tree`) or something waits for it;
when it is in, `TreeLoaded` says so. Until then the rows that come (replies, labels, other writers'
entries) go into the path's tree and are kept to be added to the whole one, and what needs the
whole tree (a move, a sibling switch, a search jump) waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from treechat.chat.events import HeaderChanged, TreeLoaded
from treechat.storage import gc_policy
from treechat.storage.base import SessionStorage, StorageError, TreeRow
from treechat.storage.tree.index import TreeIndex

if TYPE_CHECKING:
    from treechat.chat.state import ChatState

LOAD_LATER = 50_000  # entries: from here the tree is read after the first frame (SQLite: ~0.5 s and up)

Change = Callable[[TreeIndex], object]


async def first_tree(storage: SessionStorage, leaf_id: str | None) -> tuple[TreeIndex, int]:
    """(the tree to open with, entries still to load: 0 when it is the whole tree)."""
    entries = (await storage.get_session_stats()).entry_count if leaf_id is not None else 0
    if entries < LOAD_LATER or leaf_id is None:
        with gc_policy.paused():  # 10^5 rows and no cycles: see storage.gc_policy
            return TreeIndex(await storage.get_tree_columns()), 0
    return TreeIndex.build(await storage.get_path_rows(leaf_id)), entries


class TreeLoad:
    """The read of a big session's whole tree, and what happened to the tree meanwhile."""

    def __init__(self, storage: SessionStorage, done: Callable[[TreeIndex], None]) -> None:
        self._changes: list[Change] = []
        self._done, self._storage = done, storage
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin the read (once). The front end does when its first frame is drawn: the read's
        Python part holds the interpreter, and at 1M entries it made that frame 1.5 s later."""
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._read(self._storage))

    def add(self, row: TreeRow) -> None:
        self._changes.append(lambda tree: tree.add(row))

    def relabel(self, target_id: str, label: str | None) -> None:
        self._changes.append(lambda tree: tree.relabel(target_id, label))

    async def _read(self, storage: SessionStorage) -> None:
        try:
            columns = await storage.get_tree_columns()
        except (StorageError, OSError):
            return  # the path's tree stays; a store gone bad says so on the next read or write
        with gc_policy.paused():
            tree = TreeIndex(columns)
            for change in self._changes:  # what arrived while the tree was read (add: once only)
                change(tree)
            gc_policy.keep_loaded()
        self._done(tree)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def wait(self) -> None:
        self.start()
        assert self.task is not None
        await asyncio.gather(asyncio.shield(self.task), return_exceptions=True)


class ChatTree:
    """The controller's tree (`ChatState.tree`): the whole of it, or a big session's path until
    the rest is read (`ChatState.tree_load`); every row that comes goes in through here."""

    def __init__(self, s: ChatState) -> None:
        self.s = s

    def _whole_tree_in(self, tree: TreeIndex) -> None:
        self.s.emit(TreeLoaded(tree, self.s.session.leaf_id))
        self.s.emit(HeaderChanged())  # the branches are counted now

    async def open(self, storage: SessionStorage, leaf_id: str | None) -> int:
        """The tree of a session just opened; returns the entries still to load (0: all in)."""
        self.s.tree, loading = await first_tree(storage, leaf_id)
        gc_policy.keep_loaded()  # the tree stays: later collections need not walk it
        if loading:
            load = self.s.tree_load = TreeLoad(storage, lambda tree: self._tree_loaded(load, tree))
        return loading

    def _tree_loaded(self, load: TreeLoad, tree: TreeIndex) -> None:
        if load is not self.s.tree_load:
            return  # another session was opened meanwhile
        self.s.tree, self.s.tree_load = tree, None
        self._whole_tree_in(tree)

    def stop_load(self) -> None:
        if self.s.tree_load is not None:
            self.s.tree_load.cancel()
            self.s.tree_load = None

    def load_tree(self) -> None:
        if self.s.tree_load is not None:
            self.s.tree_load.start()

    async def whole_tree(self) -> None:
        """Wait until the whole tree is in (at once unless a big session's is still being read)."""
        if self.s.tree_load is not None:
            await self.s.tree_load.wait()

    def grow(self, row: TreeRow) -> None:
        self.s.tree.add(row)
        if self.s.tree_load is not None:
            self.s.tree_load.add(row)

    def relabel(self, target_id: str, label: str | None) -> TreeRow | None:
        if self.s.tree_load is not None:
            self.s.tree_load.relabel(target_id, label)
        return self.s.tree.relabel(target_id, label)
