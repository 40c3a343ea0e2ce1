"""Bulk load of a whole session (import, fork) in one pass inside one transaction.

Everything derived — branch segments, per-entry path state, labels, whole-session aggregates,
the search index — is computed in memory from the records' views (no pydantic model per entry)
with the same functions an append uses (aggregates.py), then written with one executemany per
table. The search index is filled in large segments and tidied once (fts.bulk_mode).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable, Iterator

from ..aggregates import EMPTY_STATE, StateTuple, StatsAccumulator, advance_state, first_user_text, message_ms
from ..base import ImportReport
from ..gc_policy import paused
from ..imports import ImportRecords
from . import fts, rows

Progress = Callable[[int], None]
_STEP = 2048
BULK_CACHE_KIB = 256 * 1024


def _state_values(s: StateTuple) -> tuple[Any, ...]:
    """entry_materialized's state columns (rows.STATE_COLUMNS order) of a state tuple."""
    return (s[1], s[2], s[3], s[4], s[5], s[6], s[7], json.dumps(s[8]) if s[8] is not None else None, s[9],
            json.dumps(s[10]) if s[10] is not None else None)


def bulk_load(
    c: sqlite3.Connection, sid: str, records: ImportRecords, report: ImportReport, on_progress: Progress | None = None
) -> None:
    """Write a whole session (inside write_tx; the sessions row exists already)."""
    # A 100k-entry transaction dirties far more pages than SQLite's 2 MiB default cache holds;
    # spilling them to the WAL mid-transaction made the load a quarter slower.
    cache = c.execute("PRAGMA cache_size").fetchone()[0]
    c.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
    try:
        with paused():  # millions of row tuples and no cycles: the cyclic GC only rescans them
            _load(c, sid, records, report, on_progress)
    finally:
        c.execute(f"PRAGMA cache_size = {int(cache)}")


def _load(
    c: sqlite3.Connection, sid: str, records: ImportRecords, report: ImportReport, on_progress: Progress | None
) -> None:
    views = records.views
    payloads = [r.decode() if isinstance(r, bytes) else r for r in records.raws]
    n = len(views)
    base = c.execute("SELECT coalesce(max(entry_seq), 0) + 1 FROM session_entries").fetchone()[0]

    def entry_rows() -> Iterator[tuple[Any, ...]]:
        for i, v in enumerate(views):
            if on_progress is not None and i % _STEP == _STEP - 1:
                on_progress(_STEP // 2)
            yield rows.view_row(base + i, sid, v, payloads[i])

    c.executemany(rows.INSERT_ENTRY, entry_rows())

    index = {v.id: i for i, v in enumerate(views)}
    parent_idx: list[int | None] = [
        index.get(v.parent_id) if v.parent_id is not None and v.parent_id != v.id else None for v in views
    ]
    children: list[list[int]] = [[] for _ in range(n)]
    roots: list[int] = []
    for i, p in enumerate(parent_idx):
        if p is not None:
            children[p].append(i)
        elif views[i].parent_id != views[i].id:  # a self-parented entry is a 1-cycle
            roots.append(i)

    branch_base = c.execute("SELECT coalesce(max(branch_id), 0) + 1 FROM branches").fetchone()[0]
    branches: list[tuple[Any, ...]] = []
    placed: list[tuple[int, int, int, StateTuple] | None] = [None] * n  # branch, depth, ctx_start, state
    extended = [False] * n
    branch_entry_rows, mat_rows = [], []
    stack: list[tuple[int, int | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        i, p = stack.pop()
        v = views[i]
        pb: int | None
        if p is not None:
            pb, pd, pctx, pstate = placed[p]  # type: ignore[misc]
        else:
            pb, pd, pctx, pstate = None, 0, 1, EMPTY_STATE
        state = advance_state(pstate, v)
        if p is not None and pb is not None and not extended[p] and v.type != "leaf":
            extended[p] = True
            branch = pb
        else:
            branch = branch_base + len(branches)
            branches.append((branch, sid, pb, pd))
        ctx = pctx
        if v.type == "compaction":
            ctx = state[0]
            kept = v.first_kept_entry_id
            if v.retained_tail is not True and isinstance(kept, str):
                j = p
                while j is not None and views[j].id != kept:
                    j = parent_idx[j]
                ctx = placed[j][1] if j is not None else 1  # type: ignore[index]
        placed[i] = (branch, state[0], ctx, state)
        branch_entry_rows.append((branch, state[0], base + i))
        mat_rows.append((base + i, branch, state[0], ctx, *_state_values(state)))
        stack.extend((ch, i) for ch in reversed(children[i]))
    for i in range(n):
        if placed[i] is None and len(report.problems) < 5:
            report.problems.append(f"entry {views[i].id} is on or under a parent cycle")
    c.executemany(rows.INSERT_BRANCH, branches)
    c.executemany(rows.INSERT_BRANCH_ENTRY, branch_entry_rows)
    c.executemany(rows.INSERT_MATERIALIZED, mat_rows)

    stats = StatsAccumulator()
    name, first, newest = None, "", None
    labels: dict[str, tuple[str, int, int]] = {}  # target → (label, setter seq, position)
    for i, v in enumerate(views):
        t = v.type
        if t == "leaf":
            continue  # markers are not counted, labelled or searchable
        stats.add(v)
        if t == "label" and isinstance(v.target_id, str):
            if isinstance(v.label, str) and v.label:
                position = labels[v.target_id][2] if v.target_id in labels else base + i
                labels[v.target_id] = (v.label, base + i, position)
            else:
                labels.pop(v.target_id, None)
        elif t == "session_info":
            name = (v.name.strip() if isinstance(v.name, str) else "") or None
        elif t == "message":
            if not first:
                first = first_user_text(v)
            ms = message_ms(v)
            if ms is not None and (newest is None or ms > newest):
                newest = ms

    def search_rows() -> Iterator[tuple[int, str]]:
        for i, v in enumerate(views):
            if on_progress is not None and i % _STEP == _STEP - 1:
                on_progress(_STEP // 2)
            if v.type != "leaf":
                text = rows.view_search_text(v)
                if text:
                    yield base + i, text

    with fts.bulk_mode(c):
        c.executemany(rows.INSERT_SEARCH, search_rows())
    c.executemany(
        "INSERT INTO labels (session_id, target_id, label, entry_seq, position) VALUES (?,?,?,?,?)",
        [(sid, t, *v) for t, v in labels.items()],
    )
    assignments = ", ".join(f"{f}=?" for f in rows.STATS_FIELDS)
    c.execute(f"UPDATE session_materialized SET {assignments}, name=?, first_message=? WHERE session_id=?",
              (*rows.stats_values(stats.stats()), name, first, sid))
    if newest is not None:
        c.execute(
            "UPDATE session_materialized SET message_ms=?, modified_ms=?, modified_at=? WHERE session_id=?",
            (newest, newest, rows.ms_to_iso(newest), sid),
        )
    c.execute("UPDATE sessions SET active_leaf_id=? WHERE id=?", (records.leaf_id, sid))
    report.session_id = sid
