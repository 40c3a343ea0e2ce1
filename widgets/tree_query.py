"""Type-to-filter for the tree: which rows a query keeps, and where its words are in a text.

A query narrows the tree to the rows matching every word (case-insensitive substrings of the
preview, the label and the role). Non-matching ancestors are collapsed, not listed: a match deep in
a long chain is one row, not the chain above it. The only other rows kept are the fork points
where matches on different branches meet, so the drawing still says which branch each match is on;
the view dims those (``QueryResult.context``).

Everything here is plain data over the rows; ``TreeLayout`` turns the result into lines.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, NamedTuple

from treechat.storage.base import TreeRow


def query_words(query: str) -> list[str]:
    return query.lower().split()


def haystack(row: TreeRow) -> str:
    """What a query is matched against: the preview, the label and the role (or type)."""
    return f"{row.preview} {row.label or ''} {row.role or row.type}".lower()


class Haystacks:
    """The lower-cased text of every row, built on the first query and kept as rows arrive (a
    100k tree is lower-cased once, not on every key typed into the filter)."""

    def __init__(self) -> None:
        self._text: dict[str, str] | None = None

    def reset(self) -> None:
        self._text = None

    def get(self, rows: Mapping[str, TreeRow]) -> Mapping[str, str]:
        if self._text is None or len(self._text) != len(rows):
            self._text = {rid: haystack(row) for rid, row in rows.items()}
        return self._text

    def update(self, row: TreeRow) -> None:
        """A row was added or replaced (a new label); a no-op until the first query."""
        if self._text is not None:
            self._text[row.id] = haystack(row)


class QueryResult(NamedTuple):
    matches: frozenset[str]
    context: frozenset[str]  # fork points kept for the drawing that do not match themselves


def narrow(rows: Mapping[str, TreeRow], texts: Mapping[str, str], words: list[str],
           shown: Callable[[TreeRow], bool]) -> QueryResult:
    """The rows a query keeps: every match the filter mode shows, plus the fork points where two
    matches' paths meet. O(rows): each ancestor is walked once, whatever the number of matches."""
    if len(words) == 1:
        word = words[0]
        hits: Iterable[str] = (rid for rid, text in texts.items() if word in text)
    else:
        hits = (rid for rid, text in texts.items() if all(w in text for w in words))
    matches = [rid for rid in hits if rid in rows and shown(rows[rid])]
    matched = frozenset(matches)
    # via[p] = the child of p through which the first match reached it; a second, different child
    # makes p a fork. A walk stops where an earlier one passed: every row is walked once (and a
    # parent cycle ends the walk, since its rows are marked on the first turn).
    via: dict[str, str] = {}
    forks: set[str] = set()
    for rid in matches:
        child, pid = rid, rows[rid].parent_id
        while pid is not None and pid in rows:
            seen = via.get(pid)
            if seen is not None:
                if seen != child:
                    forks.add(pid)
                break
            via[pid] = child
            child, pid = pid, rows[pid].parent_id
    context = frozenset(f for f in forks if f not in matched and shown(rows[f]))
    return QueryResult(matched, context)


def find_spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Where the query's words are in a drawn text: sorted, merged (start, end) spans."""
    if not words:
        return []
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two ("İ"): keep the offsets
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = low.find(word)
        while start != -1:
            spans.append((start, start + len(word)))
            start = low.find(word, start + len(word))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
