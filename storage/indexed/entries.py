"""`EntryIndex`: one session's entries held in memory, shared by the in-memory and JSONL backends.

Lazy: each entry is kept as its JSON line plus a `Skeleton` (id, parent, type, timestamp, role,
label/leaf target, name, compaction fields), so opening a 100k-entry file decodes only those few
fields (msgspec skips the rest). Entries are validated with pydantic when they are handed out
(a path, a page, a children list); previews, path states and stats decode an `EntryView`.

A line whose skeleton decoded but whose body pydantic rejects is found only when it is read: it is
then marked dead, counted in `problems`/`dead`, and every later read treats it as absent (a path
stops below it, as if the line had been skipped at open).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..aggregates import (
    EMPTY_STATE,
    StateTuple,
    StatsAccumulator,
    advance_state,
    first_user_text,
    message_ms,
    path_state,
    view_preview,
    view_status,
)
from ..base import (
    DuplicateEntryError,
    EntryCursor,
    EntryNotFoundError,
    InvalidTreeError,
    PathState,
    SessionStats,
    TreeRow,
)
from ..gc_policy import paused
from ..model_lite import InvalidEntryError
from ..on_demand import parse_entries_json, parse_entry, view_of_entry
from ..tree.cycles import cycle_breaks, maybe_cyclic
from ..views import DecodeErrors, EntryView, Skeleton, decode_view

if TYPE_CHECKING:  # (annotations only: a streamed import runs without pydantic's models)
    from ..model import Entry

Raw = str | bytes


def view_of_raw(raw: Raw) -> EntryView:
    """The view of a stored line; a line only pydantic understands (lax numbers) goes through it.
    A byte that is not UTF-8 reads as U+FFFD, as Pi (Node) reads the file: one bad byte in one
    message must not make the line, or the session, unreadable (issue 21)."""
    try:
        return decode_view(raw)
    except DecodeErrors:
        return view_of_entry(parse_entry(_text(raw)))


def _text(raw: Raw) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


class EntryIndex:
    """Entries in sequence order with the lookups every read needs (all O(1) or O(path))."""

    def __init__(self) -> None:
        self._raw: list[Raw] = []
        self._skel: list[Skeleton] = []
        self._lines: list[int] = []  # file line number per position (0: not from a file)
        self._pos: dict[str, int] = {}
        self._children: dict[str | None, list[int]] | None = None  # built on first use
        self._labels: dict[str, str] = {}  # insertion-ordered like Pi's Map
        self._label_ts: dict[str, str] = {}
        self._states: dict[str, PathState] = {}
        self._dead: set[int] = set()
        self._rows: dict[int, TreeRow] = {}  # rows computed so far (without their label)
        self.problems: list[str] = []  # lines found invalid when read, markers and cycles set aside
        self.repaired = 0  # parent cycles broken at load (the first entry of each became a root)
        self.leaf_id: str | None = None
        self.name: str | None = None
        self._stats = StatsAccumulator()
        self._stats_upto = 0
        self._first_user: str | None = None
        self._first_upto = 0
        self._modified: float | None = None
        self._modified_upto = 0

    # ------------------------------------------------------------ writing

    def __len__(self) -> int:
        return len(self._skel)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._pos

    def check_append(self, entry: Entry) -> None:
        """Raise if `entry` may not be appended: its id is taken or its parent is unknown."""
        if entry.id in self._pos:
            raise DuplicateEntryError(entry.id)
        if entry.parent_id is not None and entry.parent_id not in self._pos:
            raise EntryNotFoundError(entry.parent_id)

    def add(self, skel: Skeleton, raw: Raw, line: int = 0, *, move_leaf: bool = True) -> None:
        """Index an entry (already checked, or read from a file). `move_leaf=False` for entries
        another process wrote, or a run wrote on a branch the person is not on: they join the
        tree but this process's leaf stays where it is."""
        pos = len(self._skel)
        self._skel.append(skel)
        self._raw.append(raw)
        self._lines.append(line)
        self._pos[skel.id] = pos
        t = skel.type
        if t == "leaf":
            target = skel.target_id
            if not move_leaf:
                return
            if target is None or (isinstance(target, str) and target in self._pos):
                self.leaf_id = target
            elif len(self.problems) < 5:  # a marker naming no entry: ignored, the leaf stays
                self.problems.append(f"leaf marker {skel.id} names a missing entry {target}; ignored")
            return
        if move_leaf:
            self.leaf_id = skel.id
        if self._children is not None:
            self._children.setdefault(self._under(skel.parent_id), []).append(pos)
        if t == "label":
            target, text = skel.target_id, skel.label
            if isinstance(target, str):
                if isinstance(text, str) and text:
                    self._labels[target] = text
                    self._label_ts[target] = skel.timestamp
                else:
                    self._labels.pop(target, None)
                    self._label_ts.pop(target, None)
        elif t == "session_info":
            self.name = (skel.name.strip() if isinstance(skel.name, str) else "") or None

    def load(
        self, skels: list[Skeleton], raws: list[Raw], lines: Sequence[int], positions: dict[str, int] | None = None
    ) -> None:
        """Index a whole file's entries at once into an empty index (ids already unique): the
        lists are taken as they are; only labels, names and markers are looked at one by one."""
        assert not self._skel
        self._skel, self._raw = skels, raws
        self._lines = lines if isinstance(lines, list) else list(lines)
        self._pos = positions if positions is not None else dict(zip([s.id for s in skels], range(len(skels))))
        if maybe_cyclic(skels, self._pos):
            for k, what in cycle_breaks(skels):  # in memory only: the file stays as it is
                self.repaired += 1
                if len(self.problems) < 5:
                    self.problems.append(f"entry {skels[k].id} {what}; it is shown as a root")
                skels[k].parent_id = None
        special = ("label", "session_info", "leaf")
        for pos in [p for p, s in enumerate(skels) if s.type in special]:
            s = skels[pos]
            if s.type == "label" and isinstance(s.target_id, str):
                if isinstance(s.label, str) and s.label:
                    self._labels[s.target_id] = s.label
                    self._label_ts[s.target_id] = s.timestamp
                else:
                    self._labels.pop(s.target_id, None)
                    self._label_ts.pop(s.target_id, None)
            elif s.type == "session_info":
                self.name = (s.name.strip() if isinstance(s.name, str) else "") or None
        self.leaf_id = None
        for s in reversed(skels):
            if s.type != "leaf":
                self.leaf_id = s.id
                break
            if s.target_id is None or (isinstance(s.target_id, str) and s.target_id in self._pos):
                self.leaf_id = s.target_id
                break
            if len(self.problems) < 5:  # a marker naming no entry: ignored, the leaf stays
                self.problems.append(f"leaf marker {s.id} names a missing entry {s.target_id}; ignored")

    def _under(self, parent_id: str | None) -> str | None:
        """Pi, continuing one of our files, appends under a leaf marker (its last line); markers
        are not drawn, so such an entry hangs under the marker's target."""
        if parent_id is None:
            return None
        pos = self._pos.get(parent_id)
        if pos is not None and self._skel[pos].type == "leaf":
            target = self._skel[pos].target_id
            return target if isinstance(target, str) else None
        return parent_id

    # ------------------------------------------------------------ validation

    def _validate(self, positions: Sequence[int]) -> list[Entry | None]:
        """Fresh pydantic objects for these positions (None for a dead line), in one call."""
        if not positions:
            return []
        raws = [self._raw[p] for p in positions]
        parts = [_text(r) for r in raws]
        try:
            with paused():
                return list(parse_entries_json("[" + ",".join(parts) + "]"))
        except (InvalidEntryError, RecursionError, ValueError):
            pass
        out: list[Entry | None] = []
        for p, part in zip(positions, parts):
            try:
                out.append(parse_entry(part))
            except (InvalidEntryError, RecursionError, ValueError) as err:
                self._kill(p, str(err).splitlines()[0])
                out.append(None)
        return out

    def _kill(self, pos: int, why: str) -> None:
        if pos in self._dead:
            return
        self._dead.add(pos)
        where = f"line {self._lines[pos]}" if self._lines[pos] else f"entry {self._skel[pos].id}"
        if len(self.problems) < 5:
            self.problems.append(f"{where} skipped: {why}")

    @property
    def dead(self) -> int:
        return len(self._dead)

    def fresh_at(self, positions: Sequence[int]) -> list[Entry]:
        return [e for e in self._validate(positions) if e is not None]

    def fresh_path(self, positions: list[int]) -> list[Entry]:
        """A root-first path: below a dead entry the path restarts (its parent was never there)."""
        entries = self._validate(positions)
        for i in range(len(entries) - 1, -1, -1):
            if entries[i] is None:
                return [e for e in entries[i + 1 :] if e is not None]
        return [e for e in entries if e is not None]

    def fresh_many(self, entry_ids: Iterable[str]) -> list[Entry]:
        """The entries with these ids in that order (unknown and dead ones left out)."""
        pos = self._pos
        return self.fresh_at([p for p in map(pos.get, entry_ids) if p is not None])

    def fresh_one(self, entry_id: str) -> Entry | None:
        pos = self._pos.get(entry_id)
        if pos is None:
            return None
        found = self._validate([pos])
        return found[0] if found else None

    # ------------------------------------------------------------ plain reads

    def skeleton(self, entry_id: str) -> Skeleton | None:
        pos = self._pos.get(entry_id)
        return None if pos is None else self._skel[pos]

    def require(self, entry_id: str) -> int:
        pos = self._pos.get(entry_id)
        if pos is None or pos in self._dead:
            raise EntryNotFoundError(entry_id)
        return pos

    def new_id(self, taken: Iterable[str] = ()) -> str:
        """A fresh 8-hex id that no entry here uses (Pi's createEntryId)."""
        extra = set(taken)
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self._pos and candidate not in extra:
                return candidate

    def raw_lines(self) -> list[Raw]:
        return list(self._raw)

    def raw_at(self, pos: int) -> Raw:
        return self._raw[pos]

    def skeleton_at(self, pos: int) -> Skeleton:
        return self._skel[pos]

    def is_dead(self, pos: int) -> bool:
        return pos in self._dead

    def position(self, entry_id: str) -> int | None:
        return self._pos.get(entry_id)

    def label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    def label_timestamps(self) -> dict[str, str]:
        return dict(self._label_ts)

    def _views(self, start: int, stop: int) -> Iterator[tuple[int, EntryView]]:
        for pos in range(start, stop):
            if pos in self._dead or self._skel[pos].type == "leaf":
                continue
            view = self._view_at(pos)
            if view is not None:
                yield pos, view

    def _view_at(self, pos: int) -> EntryView | None:
        """The view of one line, or None (the line is set aside, and counted) when it is no entry."""
        try:
            return view_of_raw(self._raw[pos])
        except (InvalidEntryError, RecursionError, ValueError) as err:
            self._kill(pos, str(err).splitlines()[0])
            return None

    # ------------------------------------------------------------ summary values (lazy folds)

    def seed(self, stats: SessionStats, first_user: str, modified_ms: float | None) -> None:
        """Summary values known for the first len(self) entries (a cache): later folds go on from there."""
        n = len(self._skel)
        self._stats, self._stats_upto = StatsAccumulator(stats), n
        self._first_user, self._first_upto = (first_user or None), n
        self._modified, self._modified_upto = modified_ms, n

    @property
    def stats(self) -> SessionStats:
        if self._stats_upto < len(self._skel):
            for _, view in self._views(self._stats_upto, len(self._skel)):
                self._stats.add(view)
            self._stats_upto = len(self._skel)
        return self._stats.stats()

    @property
    def first_user_text(self) -> str:
        n = len(self._skel)
        if self._first_user is None and self._first_upto < n:
            types = self._skel
            for pos in range(self._first_upto, n):
                if types[pos].type == "message" and types[pos].role == "user" and pos not in self._dead:
                    view = self._view_at(pos)
                    text = first_user_text(view) if view is not None else ""
                    if text:
                        self._first_user = text
                        break
            self._first_upto = n
        return self._first_user or ""

    @property
    def modified_ms(self) -> float | None:
        n = len(self._skel)
        if self._modified_upto < n:
            skel = self._skel
            for pos in range(self._modified_upto, n):
                if skel[pos].type == "message" and skel[pos].role in ("user", "assistant") and pos not in self._dead:
                    view = self._view_at(pos)
                    ms = message_ms(view) if view is not None else None
                    if ms is not None and (self._modified is None or ms > self._modified):
                        self._modified = ms
            self._modified_upto = n
        return self._modified

    # ------------------------------------------------------------ tree reads

    def _children_map(self) -> dict[str | None, list[int]]:
        if self._children is None:
            children: dict[str | None, list[int]] = {}
            under = self._under
            for pos, s in enumerate(self._skel):
                if s.type != "leaf":
                    children.setdefault(under(s.parent_id), []).append(pos)
            self._children = children
        return self._children

    def children_of(self, parent_id: str | None) -> list[int]:
        return [p for p in self._children_map().get(parent_id, ()) if p not in self._dead]

    def of_type(self, type_: str) -> list[int]:
        return [p for p, s in enumerate(self._skel) if s.type == type_ and p not in self._dead]

    def _walk_up(self, leaf_id: str) -> Iterator[int]:
        """leaf → root; stops at a null, unknown or dead parent; raises on a cycle instead of hanging."""
        pos = self.require(leaf_id)
        seen: set[int] = set()
        skel, where = self._skel, self._pos
        while True:
            if pos in seen:
                raise InvalidTreeError(
                    f"Entry {skel[pos].id} is its own ancestor (the tree has a cycle); its path cannot be built"
                )
            seen.add(pos)
            yield pos
            parent = skel[pos].parent_id
            nxt = where.get(parent) if parent is not None else None
            if nxt is None or nxt in self._dead:
                return
            pos = nxt

    def path_to_root(self, leaf_id: str) -> list[int]:
        path = list(self._walk_up(leaf_id))
        path.reverse()
        return path

    def path_to_root_or_compaction(self, leaf_id: str) -> list[int]:
        """Root-first path that starts where the last compaction on it says context begins."""
        path: list[int] = []
        stop_at: str | None = None
        seen_compaction = False
        skel = self._skel
        for pos in self._walk_up(leaf_id):
            path.append(pos)
            s = skel[pos]
            if stop_at is not None and s.id == stop_at:
                break
            if s.type == "compaction" and not seen_compaction:
                seen_compaction = True  # only the last compaction on the path decides
                if s.retained_tail is True:
                    break
                stop_at = s.first_kept_entry_id if isinstance(s.first_kept_entry_id, str) else None
        path.reverse()
        return path

    def path_state(self, entry_id: str | None) -> PathState:
        """Aggregates along root → entry, memoised per entry (entries never change)."""
        if entry_id is None:
            return PathState()
        if entry_id in self._states:
            return self._states[entry_id]
        pending: list[int] = []
        state: StateTuple = EMPTY_STATE
        for pos in self._walk_up(entry_id):
            cached = self._states.get(self._skel[pos].id)
            if cached is not None:
                state = (cached.depth, cached.message_count, cached.input_tokens, cached.output_tokens,
                         cached.cache_read_tokens, cached.cache_write_tokens, cached.cost_total,
                         cached.context_tokens, cached.model, cached.thinking_level, cached.active_tool_names)
                break
            pending.append(pos)
        result = PathState()
        for pos in reversed(pending):
            view = self._view_at(pos)
            if view is not None:  # a line that is no entry changes nothing on the path
                state = advance_state(state, view)
            result = path_state(state)
            self._states[self._skel[pos].id] = result
        return result if pending else self._states[entry_id]

    def window(self, cursor: EntryCursor | None) -> list[int]:
        """A page of positions in sequence order, per `EntryCursor`."""
        c = cursor or EntryCursor()
        for ref in (c.after_id, c.before_id):
            if ref is not None and ref not in self._pos:
                raise EntryNotFoundError(ref)
        start = self._pos[c.after_id] + 1 if c.after_id is not None else 0
        stop = self._pos[c.before_id] if c.before_id is not None else len(self._skel)
        if c.types is not None:
            wanted_types = set(c.types)
            skel = self._skel
            wanted = [p for p in range(start, stop) if skel[p].type in wanted_types]
        else:
            wanted = list(range(start, max(start, stop)))
        if self._dead:
            wanted = [p for p in wanted if p not in self._dead]
        if c.newest_first:
            wanted.reverse()
        if c.limit is not None:
            wanted = wanted[: max(c.limit, 0)]
        return wanted

    def tree_rows(self) -> list[TreeRow]:
        """Rows of every entry (markers are not drawn)."""
        return self.rows_at(range(len(self._skel)))

    def rows_at(self, positions: Iterable[int]) -> list[TreeRow]:
        """Rows are computed once per entry (a view decode and a preview) and kept; only the
        label, which a later entry can change, is looked up on every read."""
        rows = []
        labels, under, skel, raw, dead, cache = self._labels, self._under, self._skel, self._raw, self._dead, self._rows
        for pos in positions:
            if pos in dead:
                continue
            row = cache.get(pos)
            if row is None:
                if skel[pos].type == "leaf":
                    continue
                try:
                    view = view_of_raw(raw[pos])
                except (InvalidEntryError, RecursionError, ValueError) as err:
                    self._kill(pos, str(err).splitlines()[0])
                    continue
                # the skeleton's parent: a cycle broken at load is a root there (the line is unchanged)
                row = cache[pos] = TreeRow(view.id, under(skel[pos].parent_id), view.type, view.role, view_preview(view),
                                           view.timestamp, None, view_status(view))
            label = labels.get(row.id)
            rows.append(row if label is None else row._replace(label=label))
        return rows
