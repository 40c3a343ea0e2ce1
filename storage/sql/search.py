"""The search both SQL backends run: one query language, one ranking, one kind of snippet.

Query language: plain words and "quoted phrases", every one of which must occur (as a substring,
any case), plus filters `role:<role or entry type>` and `session:<id prefix>` (`parse_query`).
Each backend finds the matches with its own index (SQLite's FTS5 trigram index, sqlite/search.py;
PostgreSQL's pg_trgm, postgres/search.py), newest first, and reads at most BROAD_MATCHES + 1 of
them: a broader query gives the newest `limit`, unranked; otherwise the matches are ranked here by
BM25 with FTS5's formula and constants (`bm25`), each term's document frequency counted up to
DF_COUNTED. A snippet marks the first match of any term, about 64 characters around it (`mark`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_TOKEN = re.compile(r'(role|session):("[^"]*"|\S+)|"([^"]*)"|(\S+)', re.IGNORECASE)
_SNIPPET_CHARS = 64  # with the trigram tokenizer one token is one character position
BROAD_MATCHES = 1000  # more matches than this: newest first instead of bm25 (module doc)
K1, B = 1.2, 0.75  # FTS5's bm25() constants
DF_COUNTED = 2000  # a term's matches are counted up to this, estimated beyond


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


def _count(text: str, term: str) -> int:
    """Occurrences of term in text, overlapping ones included (as FTS5 counts phrase hits)."""
    n, at = 0, text.find(term)
    while at >= 0:
        n, at = n + 1, text.find(term, at + 1)
    return n


def idf(rows: float, n: float) -> float:
    """A term's inverse document frequency: `n` of `rows` indexed rows hold it (FTS5's formula)."""
    return max(math.log((rows - n + 0.5) / (n + 0.5)), 1e-6) if rows else 1.0


def bm25(terms: Sequence[str], idfs: Sequence[float], texts: Sequence[str], avgdl: float,
         uncounted: int = 0) -> list[float]:
    """BM25 of each text for the terms (negated: lower is better), as FTS5's bm25() ranks: a
    text's length in tokens is its length in characters less `uncounted` (a trigram index has one
    token per character but the last two)."""
    lows = [t.lower() for t in terms]
    out = []
    for text in texts:
        low = text.lower()
        norm = K1 * (1 - B + B * max(len(text) - uncounted, 1) / avgdl)
        score = 0.0
        for w, term in zip(idfs, lows):
            tf = _count(low, term)
            score += w * tf * (K1 + 1) / (tf + norm)
        out.append(-score)
    return out
