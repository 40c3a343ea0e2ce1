"""The path the transcript shows, for a branch of any length: every id, the newest entries read.

A branch of a 1M-entry session has ~25,000 entries; reading and validating all of them took
seconds before the first frame. The ids come from the controller's tree index (no storage read);
only the newest `TAIL` entries are read with them, and the front end reads any others a window at a
time (`Chat.entries`). The path is projected as the model sees it: from the last compaction on it,
the compaction first, then what it kept, then what came after (`session.context.transform_path`).
"""

from __future__ import annotations

from collections.abc import Sequence

from treechat.storage.base import SessionStorage
from treechat.storage.model import CompactionEntry, Entry, MessageEntry, message_text
from treechat.storage.tree.index import TreeIndex
from treechat.text.expanded import as_typed

TAIL = 64  # the newest entries of a shown path read with its ids
HISTORY = 200  # the prompts the composer's Up goes through


class ShownPath(tuple[Entry, ...]):
    """The newest entries of the shown path (the whole path when it is short), in order; `ids`
    are every entry of it, root or last compaction first. Immutable: an event carries it as the
    snapshot of the moment it was made."""

    ids: tuple[str, ...]
    slots: tuple[int, ...] | None  # the ids' tree slots

    def __new__(cls, tail: Sequence[Entry] = (), ids: Sequence[str] | None = None,
                slots: Sequence[int] | None = None) -> ShownPath:
        path = super().__new__(cls, tail)
        path.ids = tuple(ids) if ids is not None else tuple(e.id for e in tail)
        path.slots = tuple(slots) if slots is not None else None
        return path

    def __setattr__(self, name: str, value: object) -> None:
        if name in self.__dict__:
            raise AttributeError(f"ShownPath.{name} is a snapshot: it does not change")
        super().__setattr__(name, value)


async def shown_path(storage: SessionStorage, tree: TreeIndex, entry_id: str | None) -> ShownPath:
    """The path to `entry_id` as the transcript shows it (see the module doc)."""
    if entry_id is None:
        return ShownPath()
    slot = tree.slot(entry_id)
    if slot is None:  # not in the tree (yet): read it whole, as it is stored
        return ShownPath(await storage.get_path_to_root_or_compaction(entry_id))
    slots = tree.path_slots(slot)
    last = next((k for k in range(len(slots) - 1, -1, -1) if tree.type_at(slots[k]) == "compaction"), None)
    if last is not None:
        compaction = await storage.get_entry(tree.id_at(slots[last]))
        kept: list[int] = []
        if isinstance(compaction, CompactionEntry) and not compaction.retained_tail:
            first = tree.slot(compaction.first_kept_entry_id)
            start = next((k for k in range(last) if slots[k] == first), None) if first is not None else None
            kept = slots[start:last] if start is not None else []
        slots = [slots[last], *kept, *slots[last + 1 :]]
    ids = [tree.id_at(s) for s in slots]
    return ShownPath(await storage.get_entries_by_ids(ids[-TAIL:]), ids, slots)


async def prompts(storage: SessionStorage, tree: TreeIndex, path: ShownPath) -> list[str]:
    """The user prompts on a shown path, oldest first (at most HISTORY of the newest)."""
    if path.slots is None:
        return [as_typed(e.message) or message_text(e.message) for e in path
                if isinstance(e, MessageEntry) and e.message.role == "user"][-HISTORY:]
    users = {code for code, kind in enumerate(tree.kind_table) if kind[:2] == ("message", "user")}
    kinds = tree.kinds
    wanted = [tree.id_at(s) for s in [s for s in path.slots if kinds[s] in users][-HISTORY:]]
    have = {e.id: e for e in path}
    missing = [i for i in wanted if i not in have]
    if missing:
        have.update((e.id, e) for e in await storage.get_entries_by_ids(missing))
    out = []
    for i in wanted:
        entry = have.get(i)
        if isinstance(entry, MessageEntry) and entry.message.role == "user":
            out.append(as_typed(entry.message) or message_text(entry.message))  # a skill's: its command
    return out
