"""Rebuilding the full-text search index from the stored entries (`treechat reindex`).

The index is derived data: every entry's payload is kept in `session_entries`, so the index can
always be dropped and written again — after FTS5 reports damage ("database disk image is
malformed" from a search), or when an older treechat indexed entries differently. The table is
dropped and created again (not `delete-all`, which needs a readable index), refilled in chunks of
entry_seq with a progress callback, then tidied as after a bulk load — all in one transaction:
a rebuild that is interrupted leaves the old index as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..sql import rows
from ..views import DecodeErrors, decode_view
from . import fts

Progress = Callable[[int], None]
_CHUNK = 4096

# The same tables and settings as migrations 002, 004 and 008; everything is indexed again in
# the index appends use (the bulk one is left empty).
_SCHEMA = (
    "DROP TABLE IF EXISTS entry_search",
    "CREATE VIRTUAL TABLE entry_search USING fts5(text, tokenize = 'trigram')",
    "INSERT INTO entry_search (entry_search, rank) VALUES ('automerge', 0)",
    "INSERT INTO entry_search (entry_search, rank) VALUES ('usermerge', 4)",
    "INSERT INTO entry_search (entry_search, rank) VALUES ('crisismerge', 16)",
    "DROP TABLE IF EXISTS entry_search_bulk",
    "CREATE VIRTUAL TABLE entry_search_bulk USING fts5(text, tokenize = 'trigram')",
    "INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('automerge', 0)",
    "INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('crisismerge', 1999)",
    "INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('hashsize', 16777216)",
)


def entry_count(c: sqlite3.Connection) -> int:
    return int(c.execute("SELECT count(*) FROM session_entries").fetchone()[0])


def _text(payload: str | bytes) -> str:
    try:
        view = decode_view(payload)
    except DecodeErrors:  # a payload that no longer decodes is simply not searchable
        return ""
    return "" if view.type == "leaf" else rows.view_search_text(view)


def rebuild_search(c: sqlite3.Connection, on_progress: Progress | None = None) -> tuple[int, int]:
    """Drop and refill the search index (inside write_tx). Returns (entries read, entries indexed);
    `on_progress(n)` after every chunk of n entries."""
    for stmt in _SCHEMA:
        c.execute(stmt)
    read = indexed = 0
    last = 0
    while True:
        batch = c.execute(
            "SELECT entry_seq, payload FROM session_entries WHERE entry_seq > ? ORDER BY entry_seq LIMIT ?",
            (last, _CHUNK),
        ).fetchall()
        if not batch:
            break
        last = batch[-1][0]
        texts = [(seq, text) for seq, payload in batch if (text := _text(payload))]
        c.executemany("INSERT INTO entry_search (rowid, text) VALUES (?, ?)", texts)
        read += len(batch)
        indexed += len(texts)
        if on_progress is not None:
            on_progress(len(batch))
    fts.tidy_level0(c)
    fts.balance(c)
    return read, indexed
