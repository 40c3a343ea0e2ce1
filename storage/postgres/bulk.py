"""Bulk load of a whole session (import, fork, copy) inside one transaction, with COPY.

Everything derived (branch segments, per-entry path state, labels, whole-session aggregates,
search text) is computed from the records' views with the functions an append uses
(aggregates.py), then each table is filled by one COPY. entry_seq and branch ids are taken
from the sequences first (one nextval per row, in one statement), so concurrent writers of
other sessions are never blocked and the new session's entries keep their file order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..aggregates import StatsAccumulator, first_user_text, message_ms
from ..base import ImportReport
from ..gc_policy import paused
from ..imports.records import ImportRecords
from ..model_lite import ms_to_iso
from ..sql import rows
from ..sql.bulk import place
from ..views import decode_view
from .db import Conn
from .storage import CHANNEL, MAT_COLUMNS, clean_row, fetch_all, pg_text, search_key

Progress = Callable[[int], None]
_ENTRY_COLUMNS = "entry_seq, session_id, id, parent_id, type, role, timestamp, preview, target_id, payload, status"


async def _reserve(conn: Conn, sequence: str, n: int) -> list[int]:
    if n == 0:
        return []
    found = await fetch_all(conn, f"SELECT nextval('{sequence}') FROM generate_series(1, %s)", (n,))
    return sorted(int(r[0]) for r in found)


async def _copy(conn: Conn, table: str, columns: str, data: Sequence[Sequence[object]]) -> None:
    if not data:
        return
    async with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in data:
            await copy.write_row(row)


async def bulk_load(conn: Conn, sid: str, records: ImportRecords, report: ImportReport,
                    on_progress: Progress | None = None) -> int:
    """Write a whole session (inside a transaction; its sessions rows exist already). Returns
    the last entry_seq."""
    records.check()
    views, raws = records.views, records.raws
    with paused():  # hundreds of thousands of row tuples and no cycles
        branches, placed = place(views)
        seqs = await _reserve(conn, "treechat_entry_seq", len(views))
        branch_ids = await _reserve(conn, "treechat_branch_seq", len(branches))
        entry_rows, members, mats, texts = [], [], [], []
        stats = StatsAccumulator()
        labels: dict[str, tuple[str, int, int]] = {}  # target → (label, setter seq, position)
        name: str | None = None
        first, newest = "", None
        for i, v in enumerate(views):
            seq, raw = seqs[i], raws[i]
            entry_rows.append(clean_row(rows.view_row(seq, sid, v, raw.decode() if isinstance(raw, bytes) else raw)))
            at = placed[i]
            if at is None:
                if len(report.problems) < 5:
                    report.problems.append(f"entry {v.id} is on or under a parent cycle")
            else:
                members.append((branch_ids[at[0]], at[1], seq))
                mats.append((seq, branch_ids[at[0]], at[1], at[2], *rows.state_tuple_values(at[3])))
            if v.type == "leaf":
                continue  # markers are not counted, labelled or searchable
            text = search_key(rows.view_search_text(v))
            if text:
                texts.append((seq, sid, text))
            stats.add(v)
            if v.type == "label" and isinstance(v.target_id, str):
                if isinstance(v.label, str) and v.label:
                    labels[v.target_id] = (pg_text(v.label), seq, labels[v.target_id][2] if v.target_id in labels
                                           else seq)
                else:
                    labels.pop(v.target_id, None)
            elif v.type == "session_info":
                name = pg_text((v.name.strip() if isinstance(v.name, str) else "") or None)
            elif v.type == "message":
                first = first or pg_text(first_user_text(v))
                ms = message_ms(v)
                if ms is not None and (newest is None or ms > newest):
                    newest = ms
        if on_progress is not None:
            on_progress(len(views) // 2)
        await _copy(conn, "session_entries", _ENTRY_COLUMNS, entry_rows)
        await _copy(conn, "branches", "branch_id, session_id, parent_branch_id, fork_depth",
                    [(branch_ids[k], sid, branch_ids[pb] if pb is not None else None, fd)
                     for k, (pb, fd) in enumerate(branches)])
        await _copy(conn, "branch_entries", "branch_id, depth, entry_seq", members)
        await _copy(conn, "entry_materialized", MAT_COLUMNS, mats)
        await _copy(conn, "entry_search", "entry_seq, session_id, text", texts)
        await _copy(conn, "labels", "session_id, target_id, label, entry_seq, position",
                    [(sid, pg_text(t), *v) for t, v in labels.items()])
    assignments = ", ".join(f"{f} = %s" for f in rows.STATS_FIELDS)
    await conn.execute(f"UPDATE session_materialized SET {assignments}, name = %s, first_message = %s"
                       " WHERE session_id = %s", (*rows.stats_values(stats.stats()), name, first, sid))
    if newest is not None:
        await conn.execute("UPDATE session_materialized SET message_ms = %s, modified_ms = %s, modified_at = %s"
                           " WHERE session_id = %s", (newest, newest, ms_to_iso(newest), sid))
    await conn.execute("UPDATE sessions SET active_leaf_id = %s WHERE id = %s", (records.leaf_id, sid))
    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, sid))
    if on_progress is not None:
        on_progress(len(views) - len(views) // 2)
    report.session_id = sid
    return seqs[-1] if seqs else 0


_REINDEX_CHUNK = 4096


async def rebuild_search(conn: Conn, on_progress: Progress | None = None) -> tuple[int, int]:
    """`treechat reindex`: every entry's search text written again (inside a transaction), from the
    payloads, a chunk of entry_seq at a time. (entries read, entries indexed)."""
    await conn.execute("SET LOCAL statement_timeout = 0")
    await conn.execute("DELETE FROM entry_search")
    read = indexed = 0
    last = 0
    while True:
        batch = await fetch_all(conn, "SELECT entry_seq, session_id, payload, type FROM session_entries"
                                " WHERE entry_seq > %s ORDER BY entry_seq LIMIT %s", (last, _REINDEX_CHUNK))
        if not batch:
            break
        last = int(batch[-1][0])
        texts = []
        for seq, sid, payload, kind in batch:
            if kind == "leaf":
                continue  # a marker says nothing
            try:
                text = search_key(rows.view_search_text(decode_view(payload)))
            except Exception:  # noqa: BLE001 - a payload that no longer decodes is simply not searchable
                continue
            if text:
                texts.append((seq, sid, text))
        await _copy(conn, "entry_search", "entry_seq, session_id, text", texts)
        read += len(batch)
        indexed += len(texts)
        if on_progress is not None:
            on_progress(len(batch))
    return read, indexed
