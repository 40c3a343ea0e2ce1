"""The transcript's items: every message of the shown path by id, a window of them loaded.

A 1M-entry session's branch holds ~25,000 messages: validating and keeping all of them before the
first frame took seconds and hundreds of MB. ``PathItems`` keeps the ids of the whole path (so the
window can go anywhere: Home/End, a search hit, a selection, scrolling) and the items of at most
``KEEP`` of them besides the newest ``PINNED``; the owner's loader (``Loader``: the App, reading
storage) hands in the items of the ids asked for. Items are the widgets' ``TranscriptItem``s of
any kind; nothing here looks inside one.

An id the loader has no item for (an entry that shows nothing after all, or one that cannot be
read) is dropped from the ids when it is loaded; ``load`` says how many were dropped before a given
index, so a window's indices can follow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from treechat.storage.model import AnyMessage, BranchSummaryEntry, CompactionEntry

# What a transcript item shows: a message of any role, or a compaction or branch summary entry (a
# card with its trigger and tokens after)
ItemMessage = AnyMessage | CompactionEntry | BranchSummaryEntry

@dataclass
class TranscriptItem:
    """One transcript entry as the App hands it in.

    ``message`` is a ``storage.model`` message (any role), or a ``CompactionEntry`` /
    ``BranchSummaryEntry`` (richer cards: trigger and tokens after). For a
    ``CompactionSummaryMessage`` the card details can be given here instead.
    """

    entry_id: str
    message: ItemMessage
    label: str | None = None
    trigger: str | None = None
    tokens_after: int | None = None
    outside_context: bool = False  # compacted originals: shown dimmed
    subagent: str | None = None  # a `task` result: the sub-agent's description (Enter, o open its session)


def as_item(value: Item) -> TranscriptItem:
    """Accept a TranscriptItem or an ``(entry_id, message)`` pair."""
    if isinstance(value, TranscriptItem):
        return value
    entry_id, message = value
    return TranscriptItem(entry_id, message)


Item = TranscriptItem | tuple[str, ItemMessage]  # what the transcript takes: an item, or (entry id, message)
Loader = Callable[[Sequence[str]], Awaitable[Sequence[TranscriptItem | None]]]

KEEP = 240  # loaded items kept around the window (beyond them the oldest loads are let go)
PINNED = 64  # the newest items stay loaded (the branch's end: appends, /copy, End)


class NotLoaded(LookupError):
    """An item was read before its window was loaded (a bug in the caller)."""


class PathItems(Sequence[TranscriptItem]):
    def __init__(self, items: Iterable[Item] = (), *, ids: Sequence[str] | None = None,
                 loader: Loader | None = None) -> None:
        loaded = [as_item(i) for i in items]
        self.ids: list[str] = list(ids) if ids is not None else [i.entry_id for i in loaded]
        self._items: dict[str, TranscriptItem] = {i.entry_id: i for i in loaded}
        self._pos: dict[str, int] | None = None
        self.loader = loader

    # ------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> TranscriptItem: ...
    @overload
    def __getitem__(self, i: slice) -> list[TranscriptItem]: ...

    def __getitem__(self, i: int | slice) -> TranscriptItem | list[TranscriptItem]:
        if isinstance(i, slice):
            return [self._item(entry_id) for entry_id in self.ids[i]]
        return self._item(self.ids[i])

    def _item(self, entry_id: str) -> TranscriptItem:
        item = self._items.get(entry_id)
        if item is None:
            raise NotLoaded(entry_id)
        return item

    def __iter__(self) -> Iterator[TranscriptItem]:
        return (self._item(entry_id) for entry_id in self.ids)

    def get(self, index: int) -> TranscriptItem | None:
        """The item at `index` if it is loaded."""
        return self._items.get(self.ids[index]) if 0 <= index < len(self.ids) else None

    def item_of(self, entry_id: str) -> TranscriptItem | None:
        return self._items.get(entry_id)

    def loaded(self) -> Iterator[TranscriptItem]:
        """The loaded items, in path order."""
        items = self._items
        return (items[i] for i in self.ids if i in items)

    def index_of(self, entry_id: str) -> int | None:
        pos = self._pos
        if pos is None:
            pos = self._pos = {entry_id: i for i, entry_id in enumerate(self.ids)}
        return pos.get(entry_id)

    def is_loaded(self, start: int, end: int) -> bool:
        items = self._items
        return all(i in items for i in self.ids[max(start, 0):end])

    # ------------------------------------------------------------ loading

    async def load(self, start: int, end: int, *, before: int | None = None) -> int:
        """Load the items of ids[start:end]; returns how many ids were dropped (nothing to show)
        before index `before` (default: `end`) — where the caller's window indices move by."""
        start, end = max(start, 0), min(end, len(self.ids))
        wanted = [i for i in self.ids[start:end] if i not in self._items]
        if not wanted or self.loader is None:
            return 0
        found = await self.loader(wanted)
        dropped: set[str] = set()
        for entry_id, item in zip(wanted, found):
            if item is None:
                dropped.add(entry_id)
            else:
                self._items[entry_id] = item
        dropped.update(wanted[len(found):])
        if not dropped:
            return 0
        limit = end if before is None else before
        moved = sum(1 for k in range(start, min(limit, end)) if self.ids[k] in dropped)
        self.ids = [i for i in self.ids if i not in dropped]
        self._pos = None
        return moved

    def let_go(self, start: int, end: int) -> None:
        """Forget loaded items far from ids[start:end] (the newest PINNED always stay; items handed
        in without a loader stay: nothing could load them again)."""
        if self.loader is None or len(self._items) <= KEEP + PINNED:
            return
        lo, hi = max(start - KEEP // 2, 0), end + KEEP // 2
        keep = set(self.ids[lo:hi]) | set(self.ids[-PINNED:])
        self._items = {k: v for k, v in self._items.items() if k in keep}

    # ------------------------------------------------------------ growing

    def append(self, item: TranscriptItem) -> None:
        self.ids.append(item.entry_id)
        self._items[item.entry_id] = item
        if self._pos is not None:
            self._pos[item.entry_id] = len(self.ids) - 1

    def prepend(self, items: Sequence[TranscriptItem]) -> None:
        self.ids[:0] = [i.entry_id for i in items]
        self._items.update((i.entry_id, i) for i in items)
        self._pos = None
