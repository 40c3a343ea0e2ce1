"""Type-to-filter for the tree: which rows a query keeps, and where its words are in a text.

A query narrows the tree to the rows matching every word (case-insensitive substrings of the
preview, the label and the role). Non-matching ancestors are collapsed, not listed: a match deep in
a long chain is one row, not the chain above it. The only other rows kept are the fork points
where matches on different branches meet, so the drawing still says which branch each match is on;
the view dims those (``QueryResult.context``).

The previews are searched where the index keeps them, one buffer for the whole tree: a word made
of ASCII is found case-insensitively by one regular expression over the buffer; the rows whose
preview is not ASCII are also checked one by one with ``str.lower`` (what the words mean there),
so a 1M-entry tree is searched in well under a second and nothing is lower-cased in advance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from treechat.storage.tree.columns import DEAD
from treechat.storage.tree.index import TreeSnapshot

_NON_ASCII = re.compile(rb"[\x80-\xff]")


def query_words(query: str) -> list[str]:
    return query.lower().split()


class QueryResult(NamedTuple):
    matches: frozenset[int]
    context: frozenset[int]  # fork points kept for the drawing that do not match themselves


def _non_ascii_slots(index: TreeSnapshot) -> list[int]:
    previews = index.previews
    buf = previews.buf
    if buf.isascii():
        return []
    out: list[int] = []
    at = 0
    while True:
        m = _NON_ASCII.search(buf, at)
        if m is None:
            return out
        slot = previews.slot_at(m.start())
        out.append(slot)
        at = previews.span(slot)[1] + 1


def _preview_hits(index: TreeSnapshot, word: str, non_ascii: list[int]) -> set[int]:
    previews = index.previews
    hits: set[int] = set()
    if word.isascii():
        pattern = re.compile(re.escape(word.encode()), re.IGNORECASE)
        buf, at = previews.buf, 0
        while True:
            m = pattern.search(buf, at)
            if m is None:
                break
            slot = previews.slot_at(m.start())
            hits.add(slot)
            at = previews.span(slot)[1] + 1
    for slot in non_ascii:
        if word in previews.get(slot).lower():
            hits.add(slot)
    return hits


def matching(index: TreeSnapshot, words: list[str]) -> set[int]:
    """The live slots whose preview, label or role (type for other entries) holds every word."""
    non_ascii = _non_ascii_slots(index)
    found: set[int] | None = None
    for word in words:
        hits = _preview_hits(index, word, non_ascii)
        for entry_id, label in index.labels.items():
            if word in label.lower():
                slot = index.slot(entry_id)
                if slot is not None:
                    hits.add(slot)
        codes = {code for code, (type_, role, _) in enumerate(index.kind_table) if word in (role or type_).lower()}
        if codes:
            kinds = index.kinds
            hits.update(s for s in range(index.size) if kinds[s] in codes)
        found = hits if found is None else found & hits
        if not found:
            return set()
    parents = index.parents
    return {s for s in found or () if parents[s] != DEAD}


def narrow(index: TreeSnapshot, words: list[str], shown: bytes | bytearray) -> QueryResult:
    """The rows a query keeps: every match the filter mode shows (`shown`: a byte per slot), plus
    the fork points where two matches' paths meet. O(rows): each ancestor is walked once,
    whatever the number of matches."""
    matches = sorted(s for s in matching(index, words) if shown[s])
    matched = frozenset(matches)
    parents = index.parents
    # via[p] = the child of p through which the first match reached it; a second, different child
    # makes p a fork. A walk stops where an earlier one passed: every row is walked once (and a
    # parent cycle ends the walk, since its rows are marked on the first turn).
    via: dict[int, int] = {}
    forks: set[int] = set()
    for slot in matches:
        child, pid = slot, parents[slot]
        while pid >= 0:
            seen = via.get(pid)
            if seen is not None:
                if seen != child:
                    forks.add(pid)
                break
            via[pid] = child
            child, pid = pid, parents[pid]
    context = frozenset(f for f in forks if f not in matched and shown[f])
    return QueryResult(matched, context)


def find_spans(text: str, words: Sequence[str]) -> list[tuple[int, int]]:
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
