"""A session's tree as a few flat columns: what `SessionStorage.get_tree_columns()` hands over.

A `TreeRow` per entry costs ~500 bytes and a dict slot: a 1M-entry session was ~700 MB of rows
before anything was drawn. Here every entry is a *slot* (its position in append order) and each
field is one column for the whole tree:

* `ids`, `timestamps`, `previews`: `StrColumn`s, one UTF-8 buffer each (fixed width when every
  string has the same length, which ids and timestamps almost always do; else with offsets);
* `parents`: the parent's slot (`ROOT` for a root or an entry whose parent was never stored,
  `DEAD` for a slot that is no row: a `leaf` marker, kept so that slots stay append order);
* `kinds`: a small code per slot into `kind_table`, the distinct (type, role, status) triples;
* `labels` (by entry id) and `orphan_parents` (slot -> the missing parent id it names): few.

`TreeIndex` (index.py) answers every question about the shape from these; nothing here
makes an object per entry. `columns_from_rows` builds them from `TreeRow`s (every backend can);
SQLite reads them straight from its skeleton index (`sqlite/tree_read.py`).
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..base import TreeRow

ROOT = -1
DEAD = -2
SEP = 0x1F  # ends every string in a StrColumn's buffer (the ASCII unit separator)
_SEP = bytes([SEP])
_CHUNK = 1 << 22  # a variable column's separators are found this many bytes at a time

Kind = tuple[str, str | None, str | None]  # (type, role, status)


class StrColumn:
    """Strings in one UTF-8 buffer, SEP between them; `get(i)` decodes one. Fixed width (`width`
    bytes a string) or variable (`starts[i]`: where string i begins; `starts[count]` is one past
    the buffer's end, as if a separator followed the last string). The buffer is the bytes it
    was read as until the first `append` (no second copy of a 100 MB column)."""

    __slots__ = ("buf", "width", "starts", "count")

    def __init__(self, buf: bytes | bytearray, count: int, width: int | None, starts: array[int] | None) -> None:
        self.buf, self.count, self.width, self.starts = buf, count, width, starts

    @classmethod
    def of(cls, strings: Iterable[str]) -> StrColumn:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        buf = _SEP.join(encoded)
        widths = {len(b) for b in encoded}
        if len(widths) <= 1:
            return cls(buf, len(encoded), widths.pop() if widths else 0, None)
        starts = array("q", itertools.accumulate(map((1).__add__, map(len, encoded)), initial=0))
        return cls(buf, len(encoded), None, starts)

    @classmethod
    def separated(cls, buf: bytes | bytearray, count: int) -> StrColumn | None:
        """A buffer of `count` strings with SEP between them (SQLite's group_concat with it).
        None when some string holds SEP itself: the caller reads that column another way."""
        if count == 0:
            return cls(b"", 0, 0, None)
        if buf.count(SEP) != count - 1:
            return None
        step, rem = divmod(len(buf) + 1, count)
        if not rem and buf[step - 1 :: step] == _SEP * (count - 1):
            return cls(buf, count, step - 1, None)
        starts = array("q")
        at, end = 0, len(buf) + 1
        while at < end:  # a piece at a time: never 10^6 bytes objects at once
            stop = buf.find(_SEP, min(at + _CHUNK, end - 1)) + 1 or end
            lengths = map((1).__add__, map(len, buf[at : stop - 1].split(_SEP)))
            starts.extend(itertools.accumulate(lengths, initial=at))
            starts.pop()  # the next piece starts there too
            at = stop
        starts.append(end)
        return cls(buf, count, None, starts)

    def __len__(self) -> int:
        return self.count

    def span(self, i: int) -> tuple[int, int]:
        """Where string `i` is in the buffer."""
        if self.width is not None:
            at = i * (self.width + 1)
            return at, at + self.width
        starts = self.starts
        assert starts is not None
        return starts[i], starts[i + 1] - 1

    def get(self, i: int) -> str:
        a, b = self.span(i)
        return self.buf[a:b].decode("utf-8", "replace")

    def slot_at(self, offset: int) -> int:
        """The string a buffer offset falls in (a separator counts with the string before it)."""
        if self.width is not None:
            return offset // (self.width + 1)
        assert self.starts is not None
        return bisect_right(self.starts, offset) - 1

    def append(self, s: str) -> None:
        data = s.encode("utf-8", "surrogatepass")
        if not isinstance(self.buf, bytearray):
            self.buf = bytearray(self.buf)
        if self.width is not None and len(data) != self.width and self.count:
            step = self.width + 1  # the first string of another width: offsets from now on
            self.starts = array("q", range(0, self.count * step + 1, step))
            self.width = None
        elif self.width is not None:
            self.width = len(data)
        if self.count:
            self.buf.append(SEP)
        self.buf += data
        if self.starts is not None:
            self.starts.append(len(self.buf) + 1)
        self.count += 1

    def strings(self) -> list[str]:
        return [self.get(i) for i in range(self.count)]


@dataclass
class TreeColumns:
    """The tree of one session, a column per field (see the module doc). Slots are append order."""

    ids: StrColumn
    parents: array[int]
    kinds: array[int]
    kind_table: list[Kind]
    timestamps: StrColumn
    previews: StrColumn
    labels: dict[str, str] = field(default_factory=dict)
    orphan_parents: dict[int, str] = field(default_factory=dict)
    by_id: array[int] | None = None  # the live slots sorted by id (None: sorted on the first lookup)

    def __len__(self) -> int:
        return len(self.parents)


def kind_code(table: list[Kind], codes: dict[Kind, int], kind: Kind) -> int:
    """The code of a kind, added to the table if new (at most 255 kinds fit a one-byte column:
    `widen` makes room for more)."""
    code = codes.get(kind)
    if code is None:
        code = codes[kind] = len(table)
        table.append(kind)
    return code


def widen(kinds: array[int], code: int) -> array[int]:
    """The kinds column, two bytes a slot once a code does not fit one."""
    return array("H", kinds) if code > 255 and kinds.typecode == "B" else kinds


def columns_from_rows(rows: Sequence[TreeRow]) -> TreeColumns:
    """The columns of `TreeRow`s in append order (what every backend can give). A `leaf` row is a
    dead slot (an entry under one hangs under its parent); a parent never stored makes a root."""
    slot: dict[str, int] = {}
    markers: dict[str, str | None] = {}
    for i, r in enumerate(rows):
        if r.type == "leaf":
            markers[r.id] = r.parent_id
        else:
            slot.setdefault(r.id, i)
    table: list[Kind] = []
    codes: dict[Kind, int] = {}
    n = len(rows)
    parents = array("i", bytes(4 * n))
    kinds = array("H", bytes(2 * n))
    orphans: dict[int, str] = {}
    labels: dict[str, str] = {}
    for i, r in enumerate(rows):
        kinds[i] = kind_code(table, codes, (r.type, r.role, r.status))
        if r.type == "leaf" or slot.get(r.id) != i:
            parents[i] = DEAD  # a marker, or an id seen before (the first one counts)
            continue
        pid = r.parent_id
        if pid in markers and pid not in slot:
            pid = markers[pid]
        p = slot.get(pid, ROOT) if pid is not None else ROOT
        if p == ROOT and pid is not None:
            orphans[i] = pid
        parents[i] = p
        if r.label:
            labels[r.id] = r.label
    return TreeColumns(StrColumn.of(r.id for r in rows), parents, kinds, table,
                       StrColumn.of(r.timestamp for r in rows), StrColumn.of(r.preview for r in rows),
                       labels, orphans)
