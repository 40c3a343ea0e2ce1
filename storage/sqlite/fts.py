"""Keeping the FTS5 index's merge work small and bounded on every append (schema v4).

FTS5 writes each transaction's new text as a new small segment and merges segments in the
background of later writes. Its `automerge` does that in bursts: every 64 leaf pages written it
merges 64 x (number of levels) pages at once — 20-140 ms inside one unlucky append on a
100k-entry index, every few dozen appends. And its `crisismerge` (16 segments on level 0)
finishes whatever level-0 merge is in progress in one go, however big.

So automerge is off (migration 004) and the storage does the merging itself, in small steps:

* every MERGE_EVERY-th entry (by the global entry_seq, so several processes share the cadence)
  its append runs `('merge', MERGE_PAGES)` inside the same transaction. FTS5 merges the level
  with the most segments (at least `usermerge`=4), so the appends' one-page segments are merged
  a few at a time and a large merge higher up advances by at most MERGE_PAGES pages per step.
  16 pages every 4 appends is several times the rate a 100k-entry index needs, and one step
  costs about a millisecond.
* level 0 must never hold a large segment (the crisis merge would then finish a large merge
  inside an append). Only a bulk load (import, fork) writes large segments: it flushes FTS5's
  default 1 MiB of pending data at a time with automerge off (FTS5's crisis merge keeps level 0
  under 16 segments meanwhile), then merges level 0 down into level 1 (`tidy_level0`) and merges
  any level that has gathered BALANCE_SEGMENTS segments (`balance`). (Earlier the load ran with
  64 KiB flushes and automerge on: 8.6 s instead of 2.7 s for the 28 M characters of a
  100k-entry session.) The price: right after a 100k import, level 1 holds a merge in progress
  that the next few hundred appends carry a step at a time (append p99 ~4-7 ms there instead of
  ~2 ms; p50 unchanged). Finishing it at import time cost ~1 s of a 6.5 s import.
* each entry indexes at most SEARCH_TEXT_LIMIT characters (rows.search_text), so no single
  append tokenizes or writes an unbounded amount.

A big import (more than one batch, stream_import) writes its text to a second index of its own,
`entry_search_bulk` (migration 008), which no append writes: FTS5 never merges it by itself
(automerge off, crisismerge at FTS5's maximum). Merging a 100k import's segments into the index
appends use was 2-2.6 s of its ~6 s of index work (a third of the import); now nothing is
rewritten. FTS5 writes a segment per statement that writes to it (an import writes the text of 2
batches in one; hashsize 16 MiB holds it), and every search reads both indexes (search.py), a
lookup per term in each segment (~0.2 ms a segment at 1M entries; 7 segments per 100k imported
entries, 62 per 1M). Once the bulk index holds BULK_SEGMENTS segments (about 4M imported
entries), the import that got it there ends by merging them, a step per transaction
(`bulk_merge_step`): a rare, large rewrite of the segments written since the last one (FTS5
moves an older segment back among them only if it is no bigger than a new one).
"""

from __future__ import annotations

import sqlite3

LIVE = "entry_search"  # appends, forks and small imports
BULK = "entry_search_bulk"  # big imports only (module doc)
TABLES = (LIVE, BULK)
BULK_SEGMENTS = 256
MERGE_EVERY = 4
MERGE_PAGES = 16
BALANCE_SEGMENTS = 8  # after a bulk load, a level holding this many segments is merged
CRISIS_MERGE = 16  # FTS5's default, as migration 004 writes it
_TIDY_PAGES = 256
_TIDY_STEPS = 200  # bounds a tidy-up even if the structure is not what we expect

_MERGE = "INSERT INTO entry_search (entry_search, rank) VALUES ('merge', ?)"
_CONFIG = "INSERT INTO entry_search (entry_search, rank) VALUES (?, ?)"


def after_append(c: sqlite3.Connection, seq: int) -> None:
    """The small merge step of every MERGE_EVERY-th append (inside the append's transaction)."""
    if seq % MERGE_EVERY == 0:
        c.execute(_MERGE, (MERGE_PAGES,))


def _varint(b: bytes, i: int) -> tuple[int, int]:
    """SQLite's big-endian varint (as FTS5 writes it)."""
    v = 0
    for k in range(9):
        ch = b[i]
        i += 1
        if k == 8:
            return (v << 8) | ch, i
        v = (v << 7) | (ch & 0x7F)
        if not ch & 0x80:
            return v, i
    return v, i  # unreachable


def levels(c: sqlite3.Connection, table: str = "entry_search") -> list[tuple[int, int]] | None:
    """(segments, segments being merged) per level of the index, from FTS5's structure record
    (%_data row 10: 4-byte cookie, nLevel, nSegment, nWriteCounter, then per level
    nMerge, nSeg and the segments). None if the record is missing or not understood."""
    assert table in TABLES
    row = c.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()
    if row is None or not isinstance(row[0], bytes) or len(row[0]) < 5:
        return None
    b, i = row[0], 4
    if b[4:8] == b"\xff\x00\x00\x01":
        return None  # FTS5 structure version 2 (SQLite 3.45+): segments carry more fields
    try:
        n_level, i = _varint(b, i)
        _, i = _varint(b, i)  # nSegment
        _, i = _varint(b, i)  # nWriteCounter
        out = []
        for _ in range(n_level):
            n_merge, i = _varint(b, i)
            n_seg, i = _varint(b, i)
            out.append((n_seg, n_merge))
            for _ in range(3 * n_seg):  # segid, first page, last page
                _, i = _varint(b, i)
        return out
    except IndexError:
        return None


class bulk_mode:
    """Around a bulk load: afterwards level 0 tidied and the levels balanced (same transaction).
    Automerge is off already (migration 004); the pending-data size is FTS5's default."""

    def __init__(self, c: sqlite3.Connection):
        self.c = c

    def __enter__(self) -> bulk_mode:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            return  # the transaction rolls back
        tidy_level0(self.c)
        balance(self.c)


def set_crisis_merge(c: sqlite3.Connection, segments: int) -> None:
    """How many segments of a level FTS5 lets gather before merging them all at once."""
    c.execute(_CONFIG, ("crisismerge", segments))


def bulk_merge_step(c: sqlite3.Connection) -> bool:
    """One step (its own transaction) of merging the bulk index once a level of it holds
    BULK_SEGMENTS segments, or of finishing a merge begun; False when there is nothing to do."""
    lv = levels(c, BULK)
    if not lv or not any(n >= BULK_SEGMENTS or m for n, m in lv):
        return False
    c.execute(f"INSERT INTO {BULK} ({BULK}, rank) VALUES ('merge', ?)", (_TIDY_PAGES * 4,))
    return True


def balance(c: sqlite3.Connection) -> None:
    """Merge while some level holds BALANCE_SEGMENTS or more segments (bounded steps)."""
    for _ in range(_TIDY_STEPS):
        if not balance_step(c):
            return


def balance_step(c: sqlite3.Connection) -> bool:
    """One step of `balance`; False when there was nothing to merge. A streamed import runs the
    steps in transactions of their own, so no one of them grows the WAL much."""
    lv = levels(c)
    if not lv or not any(n >= BALANCE_SEGMENTS for n, _ in lv):
        return False
    c.execute(_CONFIG, ("usermerge", BALANCE_SEGMENTS))
    try:
        c.execute(_MERGE, (_TIDY_PAGES * 4,))
    finally:
        c.execute(_CONFIG, ("usermerge", 4))
    return True


def tidy_level0(c: sqlite3.Connection) -> None:
    """Merge level 0 towards one segment and finish any merge in progress there.

    `merge` works on the level with the most segments; with usermerge=2 that is level 0 as long
    as it has the most, so we stop as soon as another level has as many or more (its segments
    are then merged by later appends, a step at a time) — a tidy-up never rewrites the big
    levels. The last flush comes at COMMIT, after this: one more small segment."""
    c.execute(_CONFIG, ("usermerge", 2))
    try:
        for _ in range(_TIDY_STEPS):
            lv = levels(c)
            if not lv:
                return
            seg0, merging0 = lv[0]
            if merging0 == 0 and seg0 <= 1:
                return
            if merging0 == 0 and any(max(n, m) > seg0 for n, m in lv[1:]):
                return
            c.execute(_MERGE, (_TIDY_PAGES,))
    finally:
        c.execute(_CONFIG, ("usermerge", 4))
