"""A session's tree read as columns (`TreeColumns`), straight from the skeleton index.

`get_tree_rows` makes a tuple per entry (eight Python objects): ~5 s and ~480 MB for 1M entries.
Here SQLite does the per-entry work in C and hands over a few long values:

* one scan of `session_entries_skeleton` (seq order) concatenates the ids, timestamps and
  previews (SEP between them) and a one-letter kind per entry (a CASE over known types, roles
  and statuses; anything else is `?` and read exactly afterwards);
* the shape comes from the branch tables (schema v1): each branch is a chain of consecutive
  depths, so an entry's parent is the entry before it in its branch, and a branch's first entry
  hangs under (parent branch, fork depth). One row per branch with its entry_seqs in depth order;
* the entries sorted by id come from the unique (session_id, id) index, for the id lookups.

Slots are the session's entries in entry_seq order, leaf markers included as dead slots (an
entry appended under a marker hangs under the marker's own parent, as `get_tree_rows` says).
None when something is not as the branch tables promise (an entry without a branch: a parent
cycle from an old import): the caller then builds the columns from rows.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence

from ..tree.columns import DEAD, ROOT, SEP, Kind, StrColumn, TreeColumns, kind_code, widen

# Every (type, role, status) an entry of a known type has; its letter is chr(ord("A") + index).
MESSAGE_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary")
OTHER_TYPES = ("model_change", "thinking_level_change", "active_tools_change", "compaction", "branch_summary",
               "custom", "custom_message", "label", "session_info", "leaf")
KNOWN: list[Kind] = ([("message", r, None) for r in MESSAGE_ROLES]
                     + [("message", "assistant", "error"), ("message", "assistant", "aborted")]
                     + [(t, None, None) for t in OTHER_TYPES])
_LETTER = {k: chr(ord("A") + i) for i, k in enumerate(KNOWN)}
_UNKNOWN = ord("?")


def _kind_sql() -> str:
    roles = " ".join(f"WHEN '{r}' THEN '{_LETTER[('message', r, None)]}'" for r in MESSAGE_ROLES if r != "assistant")
    assistant = (f"CASE status WHEN 'error' THEN '{_LETTER[('message', 'assistant', 'error')]}'"
                 f" WHEN 'aborted' THEN '{_LETTER[('message', 'assistant', 'aborted')]}'"
                 f" ELSE CASE WHEN status IS NULL THEN '{_LETTER[('message', 'assistant', None)]}' ELSE '?' END END")
    message = f"CASE role WHEN 'assistant' THEN {assistant} ELSE CASE WHEN status IS NULL THEN CASE role {roles} ELSE '?' END ELSE '?' END END"
    others = " ".join(f"WHEN '{t}' THEN '{_LETTER[(t, None, None)]}'" for t in OTHER_TYPES)
    return (f"CASE type WHEN 'message' THEN {message} ELSE CASE WHEN role IS NULL AND status IS NULL"
            f" THEN CASE type {others} ELSE '?' END ELSE '?' END END")


_S = "'\x1f'"  # SEP as a literal (a function call per row costs more than the concatenation)
_SCAN = (
    f"SELECT count(*), group_concat(id, {_S}), group_concat(timestamp, {_S}), group_concat(preview, {_S}),"
    f" group_concat({_kind_sql()}, '') FROM (SELECT entry_seq, id, timestamp, preview, type, role, status"
    " FROM session_entries WHERE session_id = ? AND entry_seq BETWEEN ? AND ? ORDER BY entry_seq)"
)
_LOW = "SELECT min(entry_seq) FROM session_entries WHERE session_id = ?"
_HIGH = "SELECT max(entry_seq) FROM session_entries WHERE session_id = ?"
CHUNK = 131_072  # entries a scan statement concatenates: SQLite's buffers and their copy stay small
_BRANCHES = (
    "SELECT b.branch_id, b.parent_branch_id, b.fork_depth, (SELECT group_concat(be.entry_seq) FROM branch_entries be"
    " WHERE be.branch_id = b.branch_id), (SELECT min(depth) FROM branch_entries be WHERE be.branch_id = b.branch_id),"
    " (SELECT max(depth) FROM branch_entries be WHERE be.branch_id = b.branch_id)"
    " FROM branches b WHERE b.session_id = ? ORDER BY b.branch_id"
)
_BY_ID = "SELECT group_concat(entry_seq) FROM (SELECT entry_seq FROM session_entries WHERE session_id = ? ORDER BY id)"
_SEQS = "SELECT group_concat(entry_seq) FROM (SELECT entry_seq FROM session_entries WHERE session_id = ? ORDER BY entry_seq)"


def _ints(raw: bytes | None) -> array[int]:
    """A group_concat of integers as an array (a piece at a time: no 10^6 int objects at once)."""
    out = array("q")
    if not raw:
        return out
    at = 0
    while at < len(raw):
        stop = raw.find(b",", at + (1 << 20))
        stop = len(raw) if stop < 0 else stop
        out.extend(json.loads(b"[" + raw[at:stop] + b"]"))
        at = stop + 1
    return out


def read_tree(c: sqlite3.Connection, sid: str) -> TreeColumns | None:
    """The columns of session `sid` (see the module doc), or None to fall back to rows."""
    factory = c.text_factory
    c.text_factory = bytes
    try:
        return _read(c, sid)
    finally:
        c.text_factory = factory


def _scan(c: sqlite3.Connection, sid: str) -> tuple[int, int, int, list[bytearray]] | None:
    """(entries, lowest seq, highest seq, [ids, timestamps, previews, kind letters]), a chunk
    of seqs at a time; None for a session without entries."""
    lo = c.execute(_LOW, (sid,)).fetchone()[0]
    if lo is None:
        return None
    hi = c.execute(_HIGH, (sid,)).fetchone()[0]
    bufs = [bytearray(), bytearray(), bytearray(), bytearray()]
    n = 0
    for start in range(lo, hi + 1, CHUNK):
        count, *parts = c.execute(_SCAN, (sid, start, min(start + CHUNK - 1, hi))).fetchone()
        if not count:
            continue
        for k, (buf, part) in enumerate(zip(bufs, parts)):
            if n and k < 3:
                buf.append(SEP)
            buf += part
        n += count
    return n, lo, hi, bufs


def _read(c: sqlite3.Connection, sid: str) -> TreeColumns | None:
    scanned = _scan(c, sid)
    if scanned is None:
        return TreeColumns(StrColumn.of([]), array("i"), array("H"), list(KNOWN), StrColumn.of([]), StrColumn.of([]))
    n, lo, hi, (ids_raw, ts_raw, pv_raw, kinds_raw) = scanned
    if hi - lo + 1 == n:
        slot_of: Callable[[int], int] = lo.__rsub__
        seq_at: Callable[[int], int] = lo.__add__
    else:  # other sessions' entries between ours: a slot is a rank among our seqs
        seqs = array("q", _ints(c.execute(_SEQS, (sid,)).fetchone()[0]))

        def slot_of(seq: int) -> int:
            return bisect_left(seqs, seq)

        seq_at = seqs.__getitem__
    ids, stamps, previews = (StrColumn.separated(raw, n) for raw in (ids_raw, ts_raw, pv_raw))
    del ids_raw, ts_raw, pv_raw
    if ids is None or stamps is None or previews is None:
        return None  # a separator inside a string: rare enough to read as rows
    table = list(KNOWN)
    kinds = array("B", kinds_raw.translate(bytes((b - 65) % 256 for b in range(256))))  # one byte a slot
    if _UNKNOWN in kinds_raw:
        kinds = _exact_kinds(c, sid, kinds_raw, kinds, table, seq_at)
    del kinds_raw
    shaped = _shape(c, sid, n, slot_of)
    if shaped is None:
        return None
    parents, roots = shaped
    leaf = table.index(("leaf", None, None))
    markers = _drop_markers(parents, kinds, leaf) if leaf in kinds else set()
    order = array("i", map(slot_of, _ints(c.execute(_BY_ID, (sid,)).fetchone()[0])))
    order = array("i", itertools.compress(order, map(DEAD.__ne__, map(parents.__getitem__, order))))
    labels = {bytes(t).decode(): bytes(v).decode() for t, v in c.execute(
        "SELECT target_id, label FROM labels WHERE session_id = ?", (sid,))}
    orphans = _orphans(c, [r for r in roots if parents[r] == ROOT], seq_at, {ids.get(m) for m in markers})
    return TreeColumns(ids, parents, kinds, table, stamps, previews, labels, orphans, order)


def _exact_kinds(c: sqlite3.Connection, sid: str, letters: bytes | bytearray, kinds: array[int], table: list[Kind],
                 seq_at: Callable[[int], int]) -> array[int]:
    """The kinds the CASE did not know, read exactly (a type or role of a newer version)."""
    codes = {k: i for i, k in enumerate(table)}
    unknown = [i for i in itertools.compress(range(len(letters)), map(_UNKNOWN.__eq__, letters))]
    for start in range(0, len(unknown), 500):
        part = unknown[start:start + 500]
        seqs = {seq_at(i): i for i in part}
        marks = ",".join("?" * len(part))
        for seq, t, r, s in c.execute(f"SELECT entry_seq, type, role, status FROM session_entries WHERE entry_seq IN"
                                      f" ({marks})", list(seqs)):
            kind: Kind = (t.decode(), r.decode() if r is not None else None, s.decode() if s is not None else None)
            code = kind_code(table, codes, kind)
            kinds = widen(kinds, code)
            kinds[seqs[seq]] = code
    return kinds


def _shape(c: sqlite3.Connection, sid: str, n: int, slot_of: Callable[[int], int]
           ) -> tuple[array[int], list[int]] | None:
    """Every slot's parent slot from the branch tables, and the slots of the roots; None if some
    entry is in no branch or a branch is not the chain of consecutive depths the schema promises."""
    parents = array("i", [DEAD]) * n
    slots: dict[int, Sequence[int]] = {}
    forks: dict[int, int] = {}
    heads: list[tuple[int, int | None, int]] = []
    covered = 0
    for branch, parent_branch, fork_depth, raw, low, high in c.execute(_BRANCHES, (sid,)):
        if raw is None:
            continue
        seqs = _ints(raw)
        if low != fork_depth + 1 or high - low + 1 != len(seqs):
            return None
        members: Sequence[int]
        if seqs[-1] - seqs[0] + 1 == len(seqs) and seqs == array("q", range(seqs[0], seqs[-1] + 1)):
            # the usual branch: a run of seqs, so of slots (no other session's entry between them)
            first = slot_of(seqs[0])
            members = range(first, first + len(seqs))
            parents[first + 1 : first + len(seqs)] = array("i", range(first, first + len(seqs) - 1))
        else:
            members = array("i", map(slot_of, seqs))
            any(map(parents.__setitem__, members[1:], members[:-1]))  # each under the one before it
        slots[branch], forks[branch] = members, fork_depth
        covered += len(members)
        heads.append((members[0], parent_branch, fork_depth))
    if covered != n:
        return None
    roots: list[int] = []
    for head, parent_branch, fork_depth in heads:
        above = slots.get(parent_branch) if parent_branch is not None else None
        at = fork_depth - forks[parent_branch] - 1 if above is not None and parent_branch is not None else -1
        if above is not None and 0 <= at < len(above):
            parents[head] = above[at]  # the parent branch's first entry is at its fork depth + 1
        else:
            parents[head] = ROOT
            roots.append(head)
    return parents, roots


def _drop_markers(parents: array[int], kinds: array[int], leaf: int) -> set[int]:
    """Leaf markers become dead slots; what hung under one hangs under the marker's parent.
    Returns the markers' slots."""
    markers = set(itertools.compress(range(len(kinds)), map(leaf.__eq__, kinds)))
    if not markers:
        return markers

    def resolved(p: int) -> int:
        seen = 0
        while p in markers and seen <= len(markers):
            p, seen = parents[p], seen + 1
        return p if p not in markers else ROOT

    under = [j for j in itertools.compress(range(len(parents)), map(markers.__contains__, parents))]
    for j in under:
        parents[j] = resolved(parents[j])
    for m in markers:
        parents[m] = DEAD
    return markers


def _orphans(c: sqlite3.Connection, roots: list[int], seq_at: Callable[[int], int],
             markers: set[str]) -> dict[int, str]:
    """Roots that name a parent: one that was never stored (an import keeps such entries). A
    root under a marker of "no leaf" names no parent, as its row says."""
    out: dict[int, str] = {}
    for start in range(0, len(roots), 500):
        part = {seq_at(j): j for j in roots[start:start + 500]}
        marks = ",".join("?" * len(part))
        for seq, pid in c.execute(f"SELECT entry_seq, parent_id FROM session_entries WHERE entry_seq IN ({marks})"
                                  " AND parent_id IS NOT NULL", list(part)):
            pid = bytes(pid).decode()
            if pid not in markers:
                out[part[seq]] = pid
    return out
