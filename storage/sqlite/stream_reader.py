"""The streamed import's reader (stream_import.py): a planned file's lines, a batch at a time,
turned into every row that batch writes, on a worker thread while SQLite indexes the batch before.

Each entry is placed as `sql/bulk.place` places it for a file whose parents come first:
branch segment, depth, context start, path state. The entries of this batch and the one before
are at hand; an older parent (a fork from far back) is read from what earlier batches committed.
Every entry_seq and branch_id is known here, before the database is asked: the import's ranges
were reserved when it began (stream_import._reserve), so another process writing meanwhile takes
numbers after them.

This loop runs once per entry of the file, so it is written for CPython: the common path (a
message continuing its parent's branch) inline, with its lookups bound to locals, and the rare
ones (a fork from far back, a compaction, a label, a name) in methods of their own. Its values are
held to bulk.py's by tests/storage/test_stream_import.py.
"""

from __future__ import annotations

import json
import sqlite3

import msgspec

from ..aggregates import EMPTY_STATE, StateTuple, StatsAccumulator, advance_state, first_user_text, message_ms
from ..gc_policy import paused
from ..imports.stream_scan import FilePlan, kept_lines, leaf_marker, validated
from ..json_types import Row
from ..sql import rows
from ..views import EntryView
from .storage import _LOCATE_SQL

_texts_json = msgspec.json.Encoder().encode  # 5-8x json.dumps; json_each reads it the same


class Batch:
    """One batch read, validated and placed off the database thread: every row it writes."""

    __slots__ = ("texts", "base", "entries", "branches", "members", "mats", "labels", "done", "bytes")

    def __init__(self) -> None:
        self.texts = ""  # the search texts, one JSON array (rowid = base + position)
        self.base = 0
        self.entries: list[Row] = []
        self.branches: list[tuple[int, str, int | None, int]] = []
        self.members: list[tuple[int, int, int]] = []
        self.mats: list[Row] = []
        self.labels: list[tuple[str, str, str | None, int]] = []  # (session, target, label or None, seq) in order
        self.done = 0.0  # share of the second pass done once this batch is stored
        self.bytes = 0


Placement = tuple[int, int, int, int, StateTuple]  # seq, branch, depth, ctx_start, state


class StreamReader:
    """The second pass (module doc). `next()` gives the next batch, None after the last."""

    def __init__(self, plan: FilePlan, sid: str, size: int, seq_base: int, branch_base: int, path: str) -> None:
        self.plan, self.sid, self.size, self.path = plan, sid, size, path
        self.lines = kept_lines(plan)
        self.finished = False
        self.read = 0
        self.next_seq, self.next_branch = seq_base, branch_base
        self.new: dict[str, Placement] = {}
        self.old: dict[str, Placement] = {}
        self.extended_new: set[str] = set()  # entries whose branch a child continued (this batch, the last)
        self.extended_old: set[str] = set()
        self.branch_parent: dict[int, tuple[int | None, int]] = {}  # this import's branches: parent, fork depth
        self.stats = StatsAccumulator()
        self.name: str | None = None
        self.first = ""
        self.newest: float | None = None
        self.stored = 0
        self.entries = 0  # stored lines (the leaf markers of the file included, as read_records counts)
        self._conn: sqlite3.Connection | None = None
        self._model: dict[str, str] | None = None  # the last state's model and tools, and their JSON
        self._model_json: str | None = None
        self._tools: list[str] | None = None
        self._tools_json: str | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def next(self) -> Batch | None:
        if self.finished:
            return None
        pending: list[tuple[int, bytes]] = []
        with paused(keep=True):  # the batch's rows live until stored
            for number, line in self.lines:
                pending.append((number, line))
                self.read += len(line) + 1
                if len(pending) >= self.size:
                    break
            else:
                self.finished = True
            pairs: list[tuple[bytes | str, EntryView]] = list(validated(pending, self.plan.report)) if pending else []
            if self.finished and (marker := leaf_marker(self.plan)) is not None:
                pairs.append(marker)
            if not pairs:
                return None
            batch = self._batch(pairs)
        batch.done = min(1.0, self.read / max(self.plan.size, 1))
        return batch

    def _batch(self, pairs: list[tuple[bytes | str, EntryView]]) -> Batch:
        b = Batch()
        self.entries += len(pairs)
        b.base = seq = self.next_seq
        texts: list[str] = []
        sid = self.sid
        new, old, ext_new, ext_old = self.new, self.old, self.extended_new, self.extended_old
        row_and_text, state_values, stats = rows.view_row_and_text, self._state_values, self.stats
        add_entry, add_text, add_member, add_mat = b.entries.append, texts.append, b.members.append, b.mats.append
        size = 0
        for raw, v in pairs:
            payload = raw.decode() if isinstance(raw, bytes) else raw
            row, text = row_and_text(seq, sid, v, payload)
            add_entry(row)
            size += len(payload)
            add_text(text)
            # -- placement (sql/bulk.place's values)
            t, p = v.type, v.parent_id
            parent: Placement | None = None
            from_db = False
            if p is not None and p != v.id:
                parent = new.get(p) or old.get(p)
                if parent is None:
                    parent, from_db = self._stored(p)
            if parent is not None:
                _, pb, pd, ctx, pstate = parent
            else:
                pb, pd, ctx, pstate = None, 0, 1, EMPTY_STATE
            state = advance_state(pstate, v)
            depth = state[0]
            if (parent is not None and pb is not None and t != "leaf" and p not in ext_new and p not in ext_old
                    and (not from_db or not self._continued(pb, pd))):
                ext_new.add(p)  # type: ignore[arg-type]
                branch = pb
            else:
                branch = self._new_branch(b, pb, pd)
            if t == "compaction":
                ctx = self._context_start(v, depth, pb, pd)
            new[v.id] = (seq, branch, depth, ctx, state)
            add_member((branch, depth, seq))
            add_mat((seq, branch, depth, ctx, *state_values(state)))
            # -- the session's aggregates (leaf markers are not counted, labelled or searchable)
            if t != "leaf":
                self.stored += 1
                stats.add(v)
                if t == "message":
                    if not self.first:
                        self.first = first_user_text(v)
                    ms = message_ms(v)
                    if ms is not None and (self.newest is None or ms > self.newest):
                        self.newest = ms
                elif t == "label" or t == "session_info":
                    self._setting(b, v, seq)
            seq += 1
        self.next_seq = seq
        b.texts = _texts_json(texts).decode()
        b.bytes = size + len(b.texts)
        self.old, self.new = new, {}
        self.extended_old, self.extended_new = ext_new, set()
        return b

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:  # only for a fork from far back: most imports never open it
            self._conn = sqlite3.connect(self.path, check_same_thread=False)
            self._conn.execute("PRAGMA query_only = ON")
            self._conn.execute("PRAGMA busy_timeout = 5000")
        return self._conn

    def _find(self, entry_id: str) -> Placement | None:
        """The placement of an entry stored before, or None."""
        return self.new.get(entry_id) or self.old.get(entry_id) or self._stored(entry_id)[0]

    def _stored(self, entry_id: str) -> tuple[Placement | None, bool]:
        """(placement, True) of an entry of an earlier batch (a fork from far back), read from
        the database; (None, False) if there is none."""
        row = self._db().execute(_LOCATE_SQL, (self.sid, entry_id)).fetchone()
        if row is None or row[1] is None:
            return None, False
        return (row[0], row[1], row[2], row[3], rows.state_tuple_from(row[2], row[4:])), True

    def _continued(self, branch: int, depth: int) -> bool:
        """Did an earlier batch continue this branch past `depth` (a stored parent's branch)?"""
        return self._db().execute("SELECT 1 FROM branch_entries WHERE branch_id=? AND depth=?",
                                  (branch, depth + 1)).fetchone() is not None

    def _new_branch(self, b: Batch, parent: int | None, depth: int) -> int:
        branch = self.next_branch
        self.next_branch += 1
        b.branches.append((branch, self.sid, parent, depth))
        self.branch_parent[branch] = (parent, depth)
        return branch

    def _context_start(self, v: EntryView, depth: int, pb: int | None, pd: int) -> int:
        """Where a compaction's context starts: the entry it keeps when that is on its path."""
        kept = v.first_kept_entry_id
        if v.retained_tail is True or not isinstance(kept, str):
            return depth
        k = self._find(kept)
        return k[2] if k is not None and pb is not None and self._on_path(k[1], k[2], pb, pd) else 1

    def _on_path(self, branch: int, depth: int, at_branch: int, at_depth: int) -> bool:
        """Is (branch, depth) on the path to (at_branch, at_depth)? (Only this import's branches
        can be: the session is its own.)"""
        b: int | None = at_branch
        upto = at_depth
        while b is not None:
            if b == branch:
                return depth <= upto
            found = self.branch_parent.get(b)
            if found is None:
                return False
            b, upto = found
        return False

    def _state_values(self, s: StateTuple) -> Row:
        """rows.state_tuple_values, the JSON of the model and tools remembered from the entry before:
        a child shares its parent's objects unless it changed them (advance_state), and a reply
        names the same model as the one before it."""
        model, tools = s[8], s[10]
        if model is not self._model:
            last = self._model
            if model is None or last is None or model != last or tuple(model) != tuple(last):  # keys in order too
                self._model_json = rows.model_json(model) if model is not None else None
            self._model = model
        if tools is not self._tools:
            if tools != self._tools:
                self._tools_json = json.dumps(tools) if tools is not None else None
            self._tools = tools
        return (s[1], s[2], s[3], s[4], s[5], s[6], s[7], self._model_json, s[9], self._tools_json)

    def _setting(self, b: Batch, v: EntryView, seq: int) -> None:
        """A label (set or cleared) or the session's name."""
        if v.type == "session_info":
            self.name = (v.name.strip() if isinstance(v.name, str) else "") or None
        elif isinstance(v.target_id, str):
            b.labels.append((self.sid, v.target_id, v.label if isinstance(v.label, str) and v.label else None, seq))
