"""Bulk load of a whole session (import, fork) in one pass inside one transaction.

Everything derived — branch segments, per-entry path state, labels, whole-session aggregates,
the search index — is computed in memory from the records' views (no pydantic model per entry)
with the same functions an append uses (aggregates.py), then written with one executemany per
table. The search index is filled in large segments and tidied once (fts.bulk_mode).

Two cores work at once: SQLite tokenizes the search text (most of the load) in a few long
statements that release the GIL, while a helper thread validates unchecked lines and builds every
other table's rows in Python. (Row by row, executemany would hand the GIL back and forth 100k times
and each hand-over can wait a whole switch interval; hence one statement per chunk of texts.)
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable

from ..aggregates import StatsAccumulator, first_user_text, message_ms
from ..base import ImportReport
from ..gc_policy import paused
from ..imports.records import ImportRecords
from ..json_types import Row
from ..model_lite import ms_to_iso
from ..sql import rows
from ..sql.bulk import place
from . import fts, inserts

Progress = Callable[[int], None]
_STEP = 2048
BULK_CACHE_KIB = 256 * 1024


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
    base = c.execute("SELECT coalesce(max(entry_seq), 0) + 1 FROM session_entries").fetchone()[0]
    branch_base = c.execute("SELECT coalesce(max(branch_id), 0) + 1 FROM branches").fetchone()[0]
    texts = ["" if v.type == "leaf" else rows.view_search_text(v) for v in views]
    # Tokenizing the search text is most of the load and runs in SQLite's C code without the GIL;
    # everything else computed from the views is pure Python. So a helper thread derives the
    # rows while SQLite indexes (2 cores: the load takes about the longer of the two, not the sum).
    derived = _Derived(sid, records, base, branch_base, on_progress)
    helper = threading.Thread(target=derived.run, name="treechat-bulk-rows", daemon=True)
    helper.start()
    try:
        with fts.bulk_mode(c):
            _insert_search(c, base, texts, on_progress, lambda: derived.error is not None)
    finally:
        helper.join()
    if derived.error is not None:
        raise derived.error
    report.problems.extend(derived.problems[: max(0, 5 - len(report.problems))])
    c.executemany(inserts.INSERT_ENTRY, derived.entry_rows)
    c.executemany(inserts.INSERT_BRANCH, derived.branches)
    c.executemany(inserts.INSERT_BRANCH_ENTRY, derived.branch_entry_rows)
    c.executemany(inserts.INSERT_MATERIALIZED, derived.mat_rows)
    c.executemany(
        "INSERT INTO labels (session_id, target_id, label, entry_seq, position) VALUES (?,?,?,?,?)",
        [(sid, t, *v) for t, v in derived.labels.items()],
    )
    assignments = ", ".join(f"{f}=?" for f in rows.STATS_FIELDS)
    c.execute(f"UPDATE session_materialized SET {assignments}, name=?, first_message=? WHERE session_id=?",
              (*rows.stats_values(derived.stats.stats()), derived.name, derived.first, sid))
    if derived.newest is not None:
        newest = derived.newest
        c.execute(
            "UPDATE session_materialized SET message_ms=?, modified_ms=?, modified_at=? WHERE session_id=?",
            (newest, newest, ms_to_iso(newest), sid),
        )
    c.execute("UPDATE sessions SET active_leaf_id=? WHERE id=?", (records.leaf_id, sid))
    report.session_id = sid


# One statement per chunk: SQLite parses the JSON array and indexes its texts in one step (the GIL
# released throughout), yet progress still moves and no single JSON string gets huge.
_INSERT_SEARCH_JSON = "INSERT INTO entry_search (rowid, text) SELECT ? + key, value FROM json_each(?) WHERE value <> ''"
_SEARCH_CHUNK = 8192


def _insert_search(
    c: sqlite3.Connection, base: int, texts: list[str], on_progress: Progress | None, failed: Callable[[], bool]
) -> None:
    """Index the entries' texts (entry_seq base + position; '' for none), reporting half of them
    done; stops early once `failed()` (the load is going to roll back)."""
    reported, n = 0, len(texts)
    for start in range(0, len(texts), _SEARCH_CHUNK):
        if failed():
            return
        chunk = texts[start : start + _SEARCH_CHUNK]
        try:
            c.execute(_INSERT_SEARCH_JSON, (base + start, json.dumps(chunk, ensure_ascii=False)))
        except sqlite3.OperationalError as err:
            if "json_each" not in str(err):
                raise
            # an SQLite built without its JSON functions
            c.executemany(inserts.INSERT_SEARCH, [(base + start + k, t) for k, t in enumerate(chunk) if t])
        if on_progress is not None:
            done = (n // 2) * min(start + _SEARCH_CHUNK, len(texts)) // len(texts)
            on_progress(done - reported)
            reported = done
    if on_progress is not None and reported < n // 2:
        on_progress(n // 2 - reported)


class _Derived:
    """Everything the load writes besides the search index, computed from the views alone (no
    database): the entry rows, branch segments with per-entry path state, labels and the
    whole-session aggregates. `run` is the helper thread's body; an error is kept for the loader."""

    def __init__(
        self, sid: str, records: ImportRecords, base: int, branch_base: int, on_progress: Progress | None
    ) -> None:
        self.sid, self.records, self.base, self.branch_base = sid, records, base, branch_base
        self.on_progress = on_progress
        self.error: BaseException | None = None
        self.problems: list[str] = []
        self.entry_rows: list[Row] = []
        self.branches: list[tuple[int, str, int | None, int]] = []
        self.branch_entry_rows: list[tuple[int, int, int]] = []
        self.mat_rows: list[Row] = []
        self.stats = StatsAccumulator()
        self.labels: dict[str, tuple[str, int, int]] = {}  # target → (label, setter seq, position)
        self.name: str | None = None
        self.first = ""
        self.newest: float | None = None

    def run(self) -> None:
        try:
            self.records.check()  # unchecked lines are validated here, beside the indexing
            self._entry_rows()
            self._tree()
            self._aggregates()
        except BaseException as err:  # noqa: BLE001 - re-raised by the loader in its own thread
            self.error = err

    def _entry_rows(self) -> None:
        views, raws, base, sid = self.records.views, self.records.raws, self.base, self.sid
        n = len(views)
        out = self.entry_rows
        for i, v in enumerate(views):
            if self.on_progress is not None and i % _STEP == _STEP - 1:
                self.on_progress(_STEP // 2)
            raw = raws[i]
            out.append(rows.view_row(base + i, sid, v, raw.decode() if isinstance(raw, bytes) else raw))
        if self.on_progress is not None:
            self.on_progress(n - n // 2 - (n // _STEP) * (_STEP // 2))

    def _tree(self) -> None:
        views, base, sid, first_branch = self.records.views, self.base, self.sid, self.branch_base
        segments, placed = place(views)
        self.branches.extend((first_branch + k, sid, None if up is None else first_branch + up, fork_depth)
                             for k, (up, fork_depth) in enumerate(segments))
        members, mats, values = self.branch_entry_rows, self.mat_rows, rows.state_tuple_values
        for i, at in enumerate(placed):
            if at is None:
                if len(self.problems) < 5:
                    self.problems.append(f"entry {views[i].id} is on or under a parent cycle")
                continue
            branch, depth, ctx, state = at
            members.append((first_branch + branch, depth, base + i))
            mats.append((base + i, first_branch + branch, depth, ctx, *values(state)))

    def _aggregates(self) -> None:
        base, labels = self.base, self.labels
        for i, v in enumerate(self.records.views):
            t = v.type
            if t == "leaf":
                continue  # markers are not counted, labelled or searchable
            self.stats.add(v)
            if t == "label" and isinstance(v.target_id, str):
                if isinstance(v.label, str) and v.label:
                    position = labels[v.target_id][2] if v.target_id in labels else base + i
                    labels[v.target_id] = (v.label, base + i, position)
                else:
                    labels.pop(v.target_id, None)
            elif t == "session_info":
                self.name = (v.name.strip() if isinstance(v.name, str) else "") or None
            elif t == "message":
                if not self.first:
                    self.first = first_user_text(v)
                ms = message_ms(v)
                if ms is not None and (self.newest is None or ms > self.newest):
                    self.newest = ms
