"""What the screen shows, computed from entries: transcript items and their sibling marks.

Kept apart from the App so the rules (what the transcript holds after a compaction, what a
message's `‹ n/m ›` counts) are plain functions over the controller's data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from treechat.chat.events import Mark
from treechat.chat.status import sibling_marks
from treechat.chat.subagents import child_link
from treechat.session.context import entry_to_message, transform_path
from treechat.shown_path import ShownPath
from treechat.storage.model import BranchSummaryEntry, CompactionEntry, Entry
from treechat.storage.tree.index import TreeIndex
from treechat.widgets.transcript.items import TranscriptItem

# Entry types that are a transcript item (a branch summary only with a summary: see item_for)
ITEM_TYPES = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def item_ids(path: ShownPath, tree: TreeIndex) -> list[str]:
    """The ids of the shown path that are transcript items (from the tree's kinds and previews,
    which never change for an entry once it is in: nothing is read)."""
    if path.slots is None:
        return [i.entry_id for i in transcript_items(path, {})]
    shown = {code for code, kind in enumerate(tree.kind_table) if kind[0] in ITEM_TYPES}
    summary = {code for code, kind in enumerate(tree.kind_table) if kind[0] == "branch_summary"}
    kinds, previews = tree.kinds, tree.previews
    return [i for i, s in zip(path.ids, path.slots)
            if kinds[s] in shown and (kinds[s] not in summary or previews.get(s).strip())]


def items_loader(read: Callable[[Sequence[str]], Awaitable[list[Entry]]], current: Callable[[], TreeIndex],
                 marked: Callable[[list[Mark]], None]) -> Callable[
                     [Sequence[str]], Awaitable[list[TranscriptItem | None]]]:
    """What the transcript calls for the items of ids it has not loaded: entries read by id,
    made into items (None: nothing to show), their `‹ n/m ›` marks handed to `marked`. The
    tree is the controller's as it is when they come (a big session's whole tree arrives late)."""

    async def load(ids: Sequence[str]) -> list[TranscriptItem | None]:
        found = {e.id: e for e in await read(ids)}
        tree = current()
        labels = tree.labels
        items = [item_for(found[i], labels.get(i)) if i in found else None for i in ids]
        marked(sibling_marks([i.entry_id for i in items if i is not None], tree))
        return items

    return load


def transcript_items(path: Sequence[Entry], labels: Mapping[str, str]) -> list[TranscriptItem]:
    """The transcript for a path (as read up to its last compaction): what the model sees, with
    the compaction and branch summaries as cards carrying their entry (and `labels`, by id)."""
    items: list[TranscriptItem] = []
    for entry in transform_path(path):
        item = item_for(entry, labels.get(entry.id))
        if item is not None:
            items.append(item)
    return items


def item_for(entry: Entry, label: str | None) -> TranscriptItem | None:
    """The transcript item of one entry (None for entries the transcript does not show)."""
    if isinstance(entry, CompactionEntry):
        return TranscriptItem(entry.id, entry, label=label, trigger=entry.trigger, tokens_after=entry.tokens_after)
    if isinstance(entry, BranchSummaryEntry):
        return TranscriptItem(entry.id, entry, label=label) if entry.summary else None
    msg = entry_to_message(entry)
    if msg is None:
        return None
    link = child_link(entry)  # a `task` result: Enter on it opens the sub-agent's session
    return TranscriptItem(entry.id, msg, label=label, subagent=link.description if link is not None else None)


def dimmed(entries: Sequence[Entry]) -> list[TranscriptItem]:
    """Messages a compaction took out of the context, shown dimmed under its card."""
    out: list[TranscriptItem] = []
    for entry in entries:
        msg = entry_to_message(entry)
        if msg is not None:
            out.append(TranscriptItem(entry.id, msg, outside_context=True))
    return out


__all__ = ["dimmed", "item_for", "item_ids", "items_loader", "sibling_marks", "transcript_items"]
