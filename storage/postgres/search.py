"""Search on PostgreSQL: the same query language and matching as SQLite's, ranked by BM25.

Query language (sql/search.py's, shared with SQLite): words and "quoted phrases", every one of which must
occur (as a substring, any case), plus `role:` and `session:` filters. entry_search.text holds
each entry's search text in lower case; each term, in lower case, is a `LIKE '%term%'` on it,
which the pg_trgm GIN index answers for terms of three characters or more (the same trigram
matching as SQLite's FTS5 index); shorter terms are checked on the rows the others found, or,
alone, by a scan newest first. Snippets come from the hits' own text (their payloads).

Ranking follows SQLite's plan: the newest BROAD_MATCHES + 1 matches are read; a broader query
gives the newest `limit` of them, rank 0; otherwise BM25 (FTS5's constants) is computed here over the
matched texts, with each term's document frequency counted (up to DF_COUNTED) and the number of
indexed rows from the table's statistics. Snippets mark the first match, as on SQLite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import SearchHit
from ..sql.rows import view_search_text
from ..sql.search import BROAD_MATCHES, DF_COUNTED, bm25, idf, like_pattern, mark, parse_query
from ..views import decode_view
from .db import Conn
from .storage import fetch_all, fetch_one

if TYPE_CHECKING:
    from psycopg.rows import TupleRow


async def _indexed_rows(conn: Conn, matched: int) -> float:
    """How many entries the index holds, from the table's statistics; before the first ANALYZE
    (reltuples -1) from the highest entry_seq in it (one index probe; never a count of every row,
    which on 10^5 rows cost more than the search). Only the IDF of several terms depends on it."""
    row = await fetch_one(conn, "SELECT reltuples FROM pg_class WHERE oid = 'entry_search'::regclass")
    estimate = float(row[0]) if row and row[0] is not None else -1.0
    if estimate < 0:
        top = await fetch_one(conn, "SELECT max(entry_seq) FROM entry_search")
        estimate = float(top[0]) if top and top[0] is not None else 0.0
    return max(estimate, float(matched))


async def _bm25(conn: Conn, terms: list[str], texts: list[str]) -> list[float]:
    """BM25 of each text for the terms, negated (lower is better), as FTS5's bm25() ranks."""
    rows = await _indexed_rows(conn, len(texts))
    avgdl = max(sum(len(t) for t in texts) / len(texts), 1.0) if texts else 1.0

    def idf_of(n: float) -> float:
        return idf(max(rows, n), n)  # the row count is the planner's estimate: never below what was counted

    if len(terms) == 1:
        idfs = [idf_of(len(texts))]
    else:
        idfs = []
        for term in terms:
            found = await fetch_one(conn, "SELECT count(*) FROM (SELECT 1 FROM entry_search WHERE text LIKE %s"
                                    " LIMIT %s) AS m", (like_pattern(term.lower()), DF_COUNTED))
            idfs.append(idf_of(float(found[0]) if found else 0.0))
    return bm25(terms, idfs, texts, avgdl)


async def _snippets(conn: Conn, found: list[TupleRow], terms: list[str]) -> dict[int, str]:
    """The snippet of each hit, from its entry's own text (entry_search holds it in lower case)."""
    payloads = await fetch_all(conn, "SELECT entry_seq, payload FROM session_entries WHERE entry_seq = ANY(%s)",
                               ([r[7] for r in found],))
    out: dict[int, str] = {}
    for seq, payload in payloads:
        try:
            out[int(seq)] = mark(view_search_text(decode_view(payload)), terms)
        except Exception:  # noqa: BLE001 - a payload that no longer decodes: the stored text will do
            continue
    return out


def _hits(found: list[TupleRow], ranks: list[float], snippets: dict[int, str],
          terms: list[str]) -> list[SearchHit]:
    return [SearchHit(r[0], r[1], r[2], r[3], snippets.get(int(r[7])) or mark(r[4], terms), rank, r[5], r[6],
                      r[5] or r[8] or "")
            for r, rank in zip(found, ranks)]


async def search(conn: Conn, text: str, session_id: str | None, limit: int) -> list[SearchHit]:
    q = parse_query(text)
    if not q.terms or limit <= 0:
        return []
    match: list[str] = []  # on entry_search alone: what the trigram index answers
    params: list[object] = []
    for t in q.terms:
        match.append("s.text LIKE %s")
        params.append(like_pattern(t.lower()))
    if q.sessions:
        match.append("(" + " OR ".join("s.session_id LIKE %s" for _ in q.sessions) + ")")
        params += [like_pattern(x)[1:] for x in q.sessions]  # a prefix: no leading %
    if session_id is not None:
        match.append("s.session_id = %s")
        params.append(session_id)
    outer = ""
    if q.roles:
        outer = " WHERE (" + " OR ".join("lower(e.role) = lower(%s) OR e.type = %s" for _ in q.roles) + ")"
        for r in q.roles:
            params += [r, r]
    select = ("SELECT e.session_id, e.id, e.type, e.role, hits.text, m.name, e.timestamp, hits.entry_seq,"
              " m.first_message FROM hits"
              " JOIN session_entries e ON e.entry_seq = hits.entry_seq"
              " JOIN session_materialized m ON m.session_id = e.session_id" + outer + " ORDER BY hits.entry_seq DESC"
              " LIMIT %s")
    long_terms = [t for t in q.terms if len(t) >= 3]
    if not long_terms:  # no trigram to look up: a scan, newest first, that stops at `limit` hits
        sql = "WITH hits AS (SELECT s.entry_seq, s.text FROM entry_search s WHERE " + " AND ".join(match) + ") " + select
        found = await fetch_all(conn, sql, [*params, int(limit)])
        return _hits(found, [0.0] * len(found), await _snippets(conn, found, q.terms), q.terms)
    # The matches first, whole (MATERIALIZED: the planner must not turn them into a walk of the
    # primary key filtered row by row for the sake of the LIMIT), then the newest BROAD_MATCHES + 1.
    sql = "WITH hits AS MATERIALIZED (SELECT s.entry_seq, s.text FROM entry_search s WHERE " + " AND ".join(match) + ") "
    async with conn.transaction():
        # LIKE costs far more than the planner assumes: on a table of some 10^4 rows it would
        # rather read every row than the trigram index (measured: 50-100 ms instead of 2-8 ms)
        await conn.execute("SET LOCAL enable_seqscan = off")
        found = await fetch_all(conn, sql + select, [*params, BROAD_MATCHES + 1])
        if len(found) > BROAD_MATCHES:  # broad: the newest, unranked
            found = found[:limit]
            return _hits(found, [0.0] * len(found), await _snippets(conn, found, q.terms), q.terms)
        scores = await _bm25(conn, long_terms, [r[4] for r in found])
    ranked = sorted(zip(scores, (-r[7] for r in found), found))[:limit]  # ties: newest first
    best = [r for _, _, r in ranked]
    return _hits(best, [rank for rank, _, _ in ranked], await _snippets(conn, best, q.terms), q.terms)
