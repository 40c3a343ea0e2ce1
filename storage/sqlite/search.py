"""Full-text search over every session: FTS5 trigram index ranked by bm25().

Query language: plain words and "quoted phrases" (all must match, as substrings, any case),
plus filters `role:<role or entry type>` and `session:<id prefix>`. Every term is passed to
FTS5 as a quoted string, so no user input is ever read as FTS syntax. Terms shorter than the
trigram (3 characters) cannot use the index; they become LIKE conditions, and a query made only
of such terms is a LIKE scan, newest first.

Ranking: bm25() ranks every match, which costs time in proportion to the number of matches
(bm25 also counts every match of every term for its IDF). A query that matches very many
entries — a common word such as "function" across 200k entries — would spend 50-250 ms ranking
tens of thousands of them to show 50. So the matches are first read newest first, stopping at
BROAD_MATCHES + 1 (cheap: FTS5 walks its doclists in rowid order):
* at most BROAD_MATCHES: a normal query, ranked by bm25() as before;
* more: a broad query. Its hits are the newest `limit` matches, newest first, rank 0.0 —
  bm25 over everything would mostly pick among near-equals anyway. The user narrows a broad
  query with another word, a phrase, `role:` or `session:`.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from ..base import SearchHit

_TOKEN = re.compile(r'(role|session):("[^"]*"|\S+)|"([^"]*)"|(\S+)', re.IGNORECASE)
_SNIPPET_CHARS = 64  # with the trigram tokenizer one token is one character position
BROAD_MATCHES = 1000  # more matches than this: newest first instead of bm25 (module doc)


@dataclass
class Query:
    terms: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)


def parse_query(text: str) -> Query:
    q = Query()
    for m in _TOKEN.finditer(text):
        if m.group(1):
            value = m.group(2).strip('"')
            if value:
                (q.roles if m.group(1).lower() == "role" else q.sessions).append(value)
        elif m.group(3) is not None:
            phrase = " ".join(m.group(3).split())
            if phrase:
                q.terms.append(phrase)
        else:
            q.terms.append(m.group(4))
    return q


def fts_string(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def like_pattern(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def mark(text: str, terms: list[str]) -> str:
    """A snippet around the first match of any term, the match wrapped in [[ ]]."""
    low = text.lower()
    hits = [(low.find(t.lower()), t) for t in terms if low.find(t.lower()) >= 0]
    if not hits:
        return text[:_SNIPPET_CHARS].replace("\n", " ")
    pos, term = min(hits)
    start = max(0, pos - _SNIPPET_CHARS // 2)
    end = min(len(text), pos + len(term) + _SNIPPET_CHARS // 2)
    out = text[start:pos] + "[[" + text[pos : pos + len(term)] + "]]" + text[pos + len(term) : end]
    return ("…" if start else "") + out.replace("\n", " ") + ("…" if end < len(text) else "")


def search_tx(c: sqlite3.Connection, text: str, session_id: str | None, limit: int) -> list[SearchHit]:
    q = parse_query(text)
    if not q.terms:
        return []
    long_terms = [t for t in q.terms if len(t) >= 3]
    short_terms = [t for t in q.terms if len(t) < 3]
    where: list[str] = []
    params: list[object] = []
    if long_terms:
        where.append("entry_search MATCH ?")
        params.append(" ".join(fts_string(t) for t in long_terms))
    for t in short_terms:
        where.append("entry_search.text LIKE ? ESCAPE '\\'")
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
    if long_terms:
        probe = c.execute(
            "SELECT entry_search.rowid FROM entry_search JOIN session_entries e ON e.entry_seq = entry_search.rowid"
            f" WHERE {where_sql} ORDER BY entry_search.rowid DESC LIMIT ?",
            (*params, BROAD_MATCHES + 1),
        ).fetchall()
        if len(probe) > BROAD_MATCHES:
            newest = [seq for (seq,) in probe[: max(0, int(limit))]]
            rows = c.execute(
                "SELECT e.session_id, e.id, e.type, e.role, s.text, 0.0, m.name, e.timestamp"
                " FROM session_entries e JOIN entry_search s ON s.rowid = e.entry_seq" + joins +
                f" WHERE e.entry_seq IN ({','.join('?' * len(newest))}) ORDER BY e.entry_seq DESC",
                newest,
            ).fetchall() if newest else []
            return [
                SearchHit(sid, eid, etype, role, mark(text, q.terms), rank, name, ts)
                for sid, eid, etype, role, text, rank, name, ts in rows
            ]
        select = f"snippet(entry_search, 0, '[[', ']]', '…', {_SNIPPET_CHARS}), bm25(entry_search)"
        order = "ORDER BY rank"
    else:
        select = "entry_search.text, 0.0"
        order = "ORDER BY e.entry_seq DESC"
    sql = (
        f"SELECT e.session_id, e.id, e.type, e.role, {select}, m.name, e.timestamp"
        " FROM entry_search JOIN session_entries e ON e.entry_seq = entry_search.rowid" + joins +
        f" WHERE {where_sql} {order} LIMIT ?"
    )
    params.append(int(limit))
    hits = []
    for sid, eid, etype, role, snippet, rank, name, ts in c.execute(sql, params):
        if not long_terms:
            snippet = mark(snippet, short_terms)
        elif short_terms and "[[" not in snippet:
            snippet = mark(snippet, short_terms)
        hits.append(SearchHit(sid, eid, etype, role, snippet.replace("\n", " "), float(rank), name, ts))
    return hits
