"""Full-text search over every session: FTS5 trigram index ranked by bm25() (the query language,
the ranking and the snippets are sql/search.py's, which PostgreSQL shares).

Query language: plain words and "quoted phrases" (all must match, as substrings, any case),
plus filters `role:<role or entry type>` and `session:<id prefix>`. Every term is passed to
FTS5 as a quoted string, so no user input is ever read as FTS syntax. Terms shorter than the
trigram (3 characters) cannot use the index; they become LIKE conditions, and a query made only
of such terms is a LIKE scan, newest first.

Ranking: bm25() ranks every match, which costs time in proportion to the number of matches
(FTS5's bm25() also counts every match of every term again for its IDF). A query that matches
very many entries — a common word such as "function" across 200k entries — would spend
50-250 ms ranking tens of thousands of them to show 50. So the matches are first read in rowid
order (FTS5's cheapest), stopping at BROAD_MATCHES + 1:
* more than BROAD_MATCHES: a broad query. Its hits are the newest `limit` matches, newest
  first, rank 0.0 — bm25 over everything would mostly pick among near-equals anyway. The user
  narrows a broad query with another word, a phrase, `role:` or `session:`.
* at most BROAD_MATCHES: ranked by bm25 computed here over the matched texts, with FTS5's
  formula and constants — the ranks bm25() gives — instead of running the match a second time
  inside SQLite (plus, in bm25(), once more per term for the IDF). One term: its IDF is a
  common factor, taken from the matches at hand (with a filter the order is bm25()'s, the rank
  values differ). Several terms: each term's matches are counted, up to DF_COUNTED and
  estimated from rowid density beyond that (_matches), so very common words cost little.
Snippets mark the first match of any term (`mark`), about 64 characters around it.

Two indexes hold the text (fts.py): `entry_search` (appends, forks, small imports) and
`entry_search_bulk` (big imports). Every query reads both and merges what they give by rowid
(entry_seq); bm25's statistics are the two indexes' together, so an entry ranks as it would in
one index.
"""

from __future__ import annotations

import sqlite3

from ..base import SearchHit, SearchHits
from ..sql.search import BROAD_MATCHES, DF_COUNTED, Query, bm25, idf, like_pattern, mark, parse_query
from .fts import TABLES, _varint

SHORT_SCAN = 25_000  # a query of only 1-2 character terms looks at this many of the newest entries
# A hit as the statements select it: session, entry id, type, role, text, session name, timestamp, rowid
HitRow = tuple[str, str, str, str | None, str, str | None, str, int, str | None]


def _sizes(c: sqlite3.Connection, table: str) -> tuple[int, int]:
    """(rows, tokens) of one index, from FTS5's averages record (%_data row 1: varint row count,
    then varint token total per column); (0, 0) if it has none yet."""
    row = c.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    try:
        n, i = _varint(row[0], 0)
        total, _ = _varint(row[0], i)
        return n, total
    except (TypeError, IndexError):
        return 0, 0


def _averages(c: sqlite3.Connection) -> tuple[int, float]:
    """(rows, average tokens per row) of both indexes together."""
    n = total = 0
    for table in TABLES:
        rows, tokens = _sizes(c, table)
        n, total = n + rows, total + tokens
    return n, (total / n if n else 1.0)


def _matches(c: sqlite3.Connection, term: str, rows: int) -> float:
    """How many rows contain term: counted up to DF_COUNTED matches per index, estimated beyond
    that from how far into the index's rowids the DF_COUNTED-th match lies (matches spread evenly)."""
    found = 0.0
    for table in TABLES:
        seqs: list[tuple[int]] = c.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?", (fts_string(term), DF_COUNTED)
        ).fetchall()
        if len(seqs) < DF_COUNTED:
            found += len(seqs)
            continue
        low, top = c.execute(f"SELECT min(id), max(id) FROM {table}_content").fetchone()  # O(log n)
        found += min(float(_sizes(c, table)[0]), DF_COUNTED * (top - low + 1) / max(seqs[-1][0] - low + 1, 1))
    return min(float(rows), found)


def _bm25(c: sqlite3.Connection, terms: list[str], texts: list[str]) -> list[float]:
    """bm25() for each text, FTS5's formula and constants (negated: lower is better).

    FTS5 gets each term's IDF by running each term's match once more. One term: its IDF is a
    common factor, taken from the matches at hand. Several terms: each term's matches are
    counted (estimated past DF_COUNTED: see _matches)."""
    rows, avgdl = _averages(c)
    idfs = [idf(rows, len(texts))] if len(terms) == 1 else [idf(rows, _matches(c, t, rows)) for t in terms]
    return bm25(terms, idfs, texts, avgdl, uncounted=2)  # trigram: a token per character but the last two


def fts_string(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def search_tx(c: sqlite3.Connection, text: str, session_id: str | None, limit: int,
              further: int = 0) -> list[SearchHit]:
    """`further`: the newest entries a capped short search already looked at (SearchHits.searched)."""
    q = parse_query(text)
    if not q.terms:
        return []
    long_terms = [t for t in q.terms if len(t) >= 3]
    if long_terms and further > 0:
        return []  # the trigram index answered it whole the first time
    short_terms = [t for t in q.terms if len(t) < 3]
    where: list[str] = []  # "{t}": the index (TABLES) each statement reads
    params: list[object] = []
    if long_terms:
        where.append("{t} MATCH ?")
        params.append(" ".join(fts_string(t) for t in long_terms))
    for t in short_terms:
        where.append("{t}.text LIKE ? ESCAPE '\\'")
        params.append(like_pattern(t))
    if q.roles:
        ors = " OR ".join("lower(e.role) = lower(?) OR e.type = ?" for _ in q.roles)
        where.append(f"({ors})")
        for r in q.roles:
            params += [r, r]
    if q.sessions:
        where.append("(" + " OR ".join("e.session_id LIKE ? ESCAPE '\\'" for _ in q.sessions) + ")")
        params += [like_pattern(s)[1:] for s in q.sessions]  # prefix: no leading %
    if session_id is not None:
        where.append("e.session_id = ?")
        params.append(session_id)
    where_sql = " AND ".join(where)
    joins = " JOIN session_materialized m ON m.session_id = e.session_id"
    select = ("SELECT e.session_id, e.id, e.type, e.role, {t}.text, m.name, e.timestamp, {t}.rowid, m.first_message"
              " FROM {t} JOIN session_entries e ON e.entry_seq = {t}.rowid" + joins + f" WHERE {where_sql}")
    if long_terms:
        # Rowid order is FTS5's natural (cheapest) order; stop once the query is known to be broad.
        found: list[HitRow] = []
        for table in TABLES:
            if len(found) <= BROAD_MATCHES:
                found += c.execute(select.replace("{t}", table) + " LIMIT ?",
                                   (*params, BROAD_MATCHES + 1 - len(found))).fetchall()
        if len(found) > BROAD_MATCHES:
            newest = _newest(c, select + " ORDER BY {t}.rowid DESC LIMIT ?", (*params, int(limit)), limit)
            return [SearchHit(r[0], r[1], r[2], r[3], mark(r[4], q.terms), 0.0, r[5], r[6], r[5] or r[8] or "")
                    for r in newest]
        scores = _bm25(c, long_terms, [r[4] for r in found])
        ranked = sorted(zip(scores, (-r[7] for r in found), found))  # ties: newest first
        return [
            SearchHit(r[0], r[1], r[2], r[3], mark(r[4], q.terms), rank, r[5], r[6], r[5] or r[8] or "")
            for rank, _, r in ranked[: max(0, int(limit))]
        ]
    # Only terms shorter than a trigram: no index can answer them, so a LIKE scan, newest first,
    # over the newest SHORT_SCAN entries at most (a full scan of 1M entries took 5-11 s), or the
    # SHORT_SCAN after the `further` newest ("more…"). SearchHits says how far this one looked.
    scope = " AND ".join(w for w in where if w.startswith("(") or w.startswith("e.session_id")) or "1"
    scope_params = params[len(params) - _scope_params(q, session_id):]
    oldest, newest = c.execute(  # the window's entry_seqs
        f"SELECT min(entry_seq), max(entry_seq) FROM (SELECT e.entry_seq FROM session_entries e WHERE {scope}"
        " ORDER BY e.entry_seq DESC LIMIT ? OFFSET ?)", (*scope_params, SHORT_SCAN, max(0, further))).fetchone()
    if oldest is None:
        return []  # no entries (further back)
    sql = select + " AND {t}.rowid BETWEEN ? AND ? ORDER BY {t}.rowid DESC LIMIT ?"
    found = _newest(c, sql, (*params, oldest, newest, int(limit)), limit)
    hits = [SearchHit(sid, eid, etype, role, mark(text, short_terms), 0.0, name, ts, name or first or "")
            for sid, eid, etype, role, text, name, ts, _, first in found]
    if len(hits) >= limit or not c.execute(
            f"SELECT 1 FROM session_entries e WHERE e.entry_seq < ? AND {scope} LIMIT 1",
            (oldest, *scope_params)).fetchone():
        return hits  # enough, or the window held every entry: nothing further back
    capped = SearchHits(hits)
    capped.searched = max(0, further) + SHORT_SCAN
    return capped


def _newest(c: sqlite3.Connection, sql: str, params: tuple[object, ...], limit: int) -> list[HitRow]:
    """The `limit` newest rows of a statement over both indexes ("{t}"), newest first."""
    rows: list[HitRow] = []
    for table in TABLES:
        rows += c.execute(sql.replace("{t}", table), params).fetchall()
    rows.sort(key=lambda r: r[7], reverse=True)
    return rows[: max(0, int(limit))]


def _scope_params(q: Query, session_id: str | None) -> int:
    """How many of the WHERE parameters (at its end) belong to role/session filters."""
    return 2 * len(q.roles) + len(q.sessions) + (1 if session_id is not None else 0)
