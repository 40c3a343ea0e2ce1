"""`EntryIndex`: one session's entries held in memory, shared by the in-memory and JSONL backends.

Each entry is kept twice: the parsed model (for indexing and aggregates) and its JSON (so every
read hands out a freshly parsed object and callers can never mutate what is stored).
Nothing here validates appends except `check_append`; loading a file indexes what it finds.
"""

from __future__ import annotations

import gc
import secrets
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterable, Iterator

from .aggregates import advance_path_state, advance_stats, tree_row
from .base import (
    DuplicateEntryError,
    EntryCursor,
    EntryNotFoundError,
    InvalidTreeError,
    PathState,
    SessionStats,
    TreeRow,
)
from .model import (
    AssistantMessage,
    CompactionEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    SessionInfoEntry,
    TextContent,
    UserMessage,
    iso_to_ms,
    parse_entries_json,
)


def entry_json(entry: Entry) -> str:
    """One JSONL line (without newline): compact like Pi's JSON.stringify, only the keys that are set."""
    return entry.model_dump_json(by_alias=True, exclude_unset=True)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Bulk loads make many objects and no cycles; the cyclic GC would rescan them all, repeatedly
    (it makes reading a 100k-entry file about three times slower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ms_to_iso(ms: float) -> str:
    """Epoch milliseconds → ISO-8601 UTC with milliseconds and a Z (Pi's Date.toISOString);
    "" for a value no date can hold (a corrupt timestamp must not break listing)."""
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, ValueError, OSError):
        return ""
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EntryIndex:
    """Entries in sequence order with the lookups every read needs (all O(1) or O(path))."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._raw: list[str | bytes] = []
        self._pos: dict[str, int] = {}
        self._children: dict[str | None, list[str]] = {}
        self._by_type: dict[str, list[int]] = {}
        # Insertion-ordered like Pi's Map: re-labelling keeps the position, clearing removes it.
        self._labels: dict[str, str] = {}
        self._label_ts: dict[str, str] = {}
        self._states: dict[str, PathState] = {}
        self.leaf_id: str | None = None
        self.name: str | None = None
        self._stats = SessionStats()
        self._stats_upto = 0  # entries folded into _stats so far (folded lazily: opening is quicker)
        self.first_user_text = ""
        self.modified_ms: float | None = None  # newest user/assistant message (Pi's `modified`)

    # ------------------------------------------------------------ writing

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._pos

    def check_append(self, entry: Entry) -> None:
        """Raise if `entry` may not be appended: its id is taken or its parent is unknown."""
        if entry.id in self._pos:
            raise DuplicateEntryError(entry.id)
        if entry.parent_id is not None and entry.parent_id not in self._pos:
            raise EntryNotFoundError(entry.parent_id)

    def add(self, entry: Entry, raw: str | bytes | None = None) -> None:
        """Index an entry (already checked, or loaded from a file) and move the leaf."""
        pos = len(self._entries)
        self._entries.append(entry)
        self._raw.append(raw if raw is not None else entry_json(entry))
        self._pos[entry.id] = pos
        self._by_type.setdefault(entry.type, []).append(pos)
        if isinstance(entry, LeafEntry):
            # A navigation marker: it moves the leaf but is no node of the conversation.
            self.leaf_id = entry.target_id
            return
        self.leaf_id = entry.id
        parent = self.get(entry.parent_id) if entry.parent_id is not None else None
        under = parent.target_id if isinstance(parent, LeafEntry) else entry.parent_id  # see tree_rows
        self._children.setdefault(under, []).append(entry.id)
        if isinstance(entry, LabelEntry):
            if entry.label:
                self._labels[entry.target_id] = entry.label
                self._label_ts[entry.target_id] = entry.timestamp
            else:
                self._labels.pop(entry.target_id, None)
                self._label_ts.pop(entry.target_id, None)
        elif isinstance(entry, SessionInfoEntry):
            self.name = (entry.name or "").strip() or None
        elif isinstance(entry, MessageEntry):
            self._note_message(entry)

    def _note_message(self, entry: MessageEntry) -> None:
        msg = entry.message
        if not isinstance(msg, (UserMessage, AssistantMessage)):
            return
        ms = msg.timestamp if isinstance(msg.timestamp, (int, float)) else iso_to_ms(entry.timestamp)
        if ms == ms and (self.modified_ms is None or ms > self.modified_ms):  # ms == ms: not NaN
            self.modified_ms = ms
        if isinstance(msg, UserMessage) and not self.first_user_text:
            c = msg.content
            text = c if isinstance(c, str) else " ".join(b.text for b in c if isinstance(b, TextContent))
            self.first_user_text = text.strip()

    # ------------------------------------------------------------ plain reads (internal objects)

    @property
    def stats(self) -> SessionStats:
        while self._stats_upto < len(self._entries):
            entry = self._entries[self._stats_upto]
            self._stats_upto += 1
            if not isinstance(entry, LeafEntry):
                self._stats = advance_stats(self._stats, entry)
        return self._stats

    def get(self, entry_id: str) -> Entry | None:
        pos = self._pos.get(entry_id)
        return None if pos is None else self._entries[pos]

    def require(self, entry_id: str) -> Entry:
        entry = self.get(entry_id)
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    def new_id(self) -> str:
        """A fresh 8-hex id that no entry here uses (Pi's createEntryId)."""
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self._pos:
                return candidate

    def entries(self) -> list[Entry]:
        return list(self._entries)

    def label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    def label_timestamps(self) -> dict[str, str]:
        return dict(self._label_ts)

    # ------------------------------------------------------------ fresh copies for callers

    def fresh(self, entries: Iterable[Entry]) -> list[Entry]:
        """New objects parsed from the stored JSON, in one validation call."""
        raws = [self._raw[self._pos[e.id]] for e in entries]
        if not raws:
            return []
        parts = [r.decode() if isinstance(r, bytes) else r for r in raws]
        with gc_paused():
            return parse_entries_json("[" + ",".join(parts) + "]")

    def fresh_one(self, entry_id: str) -> Entry | None:
        entry = self.get(entry_id)
        return None if entry is None else self.fresh([entry])[0]

    def raw_lines(self) -> list[str | bytes]:
        return list(self._raw)

    # ------------------------------------------------------------ tree reads

    def children_of(self, parent_id: str | None) -> list[Entry]:
        return [self._entries[self._pos[i]] for i in self._children.get(parent_id, ())]

    def of_type(self, type_: str) -> list[Entry]:
        return [self._entries[p] for p in self._by_type.get(type_, ())]

    def _walk_up(self, leaf_id: str) -> Iterable[Entry]:
        """leaf → root; stops at a null or unknown parent; raises on a cycle instead of hanging."""
        entry = self.require(leaf_id)
        seen: set[str] = set()
        while True:
            if entry.id in seen:
                raise InvalidTreeError(
                    f"Entry {entry.id} is its own ancestor (the tree has a cycle); its path cannot be built"
                )
            seen.add(entry.id)
            yield entry
            parent = entry.parent_id
            if parent is None or parent not in self._pos:
                return
            entry = self._entries[self._pos[parent]]

    def path_to_root(self, leaf_id: str) -> list[Entry]:
        path = list(self._walk_up(leaf_id))
        path.reverse()
        return path

    def path_to_root_or_compaction(self, leaf_id: str) -> list[Entry]:
        """Root-first path that starts where the last compaction on it says context begins."""
        path: list[Entry] = []
        stop_at: str | None = None
        seen_compaction = False
        for entry in self._walk_up(leaf_id):
            path.append(entry)
            if stop_at is not None and entry.id == stop_at:
                break
            if isinstance(entry, CompactionEntry) and not seen_compaction:
                seen_compaction = True  # only the last compaction on the path decides
                if entry.retained_tail:
                    break
                stop_at = entry.first_kept_entry_id
        path.reverse()
        return path

    def path_state(self, entry_id: str | None) -> PathState:
        """Aggregates along root → entry, memoised per entry (entries never change)."""
        if entry_id is None:
            return PathState()
        if entry_id in self._states:
            return self._states[entry_id]
        pending: list[Entry] = []
        state = PathState()
        for entry in self._walk_up(entry_id):
            cached = self._states.get(entry.id)
            if cached is not None:
                state = cached
                break
            pending.append(entry)
        for entry in reversed(pending):
            state = advance_path_state(state, entry)
            self._states[entry.id] = state
        return state

    def window(self, cursor: EntryCursor | None) -> list[Entry]:
        """A page of entries in sequence order, per `EntryCursor`."""
        c = cursor or EntryCursor()
        for ref in (c.after_id, c.before_id):
            if ref is not None and ref not in self._pos:
                raise EntryNotFoundError(ref)
        start = self._pos[c.after_id] + 1 if c.after_id is not None else 0
        stop = self._pos[c.before_id] if c.before_id is not None else len(self._entries)
        if c.types is not None:
            wanted = sorted(p for t in set(c.types) for p in self._by_type.get(t, ()) if start <= p < stop)
        else:
            wanted = list(range(start, max(start, stop)))
        if c.newest_first:
            wanted.reverse()
        if c.limit is not None:
            wanted = wanted[: max(c.limit, 0)]
        return [self._entries[p] for p in wanted]

    def tree_rows(self) -> list[TreeRow]:
        rows = []
        for e in self._entries:
            if isinstance(e, LeafEntry):
                continue
            row = tree_row(e, self._labels.get(e.id))
            parent = self.get(e.parent_id) if e.parent_id is not None else None
            if isinstance(parent, LeafEntry):
                # Pi, continuing one of our files, appends under the marker (its last line);
                # markers are not drawn, so the row hangs under the marker's target.
                row = row._replace(parent_id=parent.target_id)
            rows.append(row)
        return rows
