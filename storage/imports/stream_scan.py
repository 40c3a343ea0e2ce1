"""A Pi session file of any size read in bounded memory, for a streamed import (issue 26).

`read_records` holds a whole file's lines and views at once: 4.7 GB for a 1M-entry file. Here
the file is read twice, a line at a time, and never held:

1. `plan_file`: skeletons only (msgspec, no bodies), to learn what a reader of the whole file
   would: which lines are skipped (not JSON, not an entry, no id, a duplicate id), where the leaf
   is, and whether every parent comes before its children. What it keeps is the set of ids and
   the numbers of the skipped lines.
2. `kept_lines` and `validated`: each kept line again, decoded into its view and validated by
   pydantic, a batch at a time (the backend stores each batch before reading the next).

Only what this can do alone comes here: a v3 file whose parents all come before their children
(every file Pi writes), or whose only entry written after its children is its last line (a
treechat export whose leaf has entries below it: Pi resumes at the last line): that line is read
in the first pass and handed on right after its parent. Anything else — an older version
(migrated in memory), another parent that comes later or a parent cycle — gets None from
`plan_file`, and the caller reads it whole with `read_records` as before.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..base import ImportReport, SessionFileError
from ..gc_policy import paused
from ..json_types import SessionHeader
from ..model_lite import InvalidEntryError, new_entry_id, now_iso
from ..on_demand import parse_entries_json, parse_entry, view_of_entry
from ..session_file import (
    CURRENT_VERSION,
    _as_utf8,
    _first_line,
    _is_header,
    _lenient_skeleton,
    _without_lone_surrogates,
)
from ..views import DecodeErrors, EntryView, decode_skeleton, decode_view, decode_views
from .wire_check import deep, proven_valid_array

_CHUNK = 1 << 20  # both passes read this many bytes of lines at a time


@dataclass
class FilePlan:
    """What the first pass learnt. `skip`: line numbers of lines that are no entry to store."""

    path: Path
    header: SessionHeader
    body_start: int  # the line number of the first line after the header
    entries: int = 0  # kept lines (before the second pass validates them)
    size: int = 0
    skip: array[int] = field(default_factory=lambda: array("q"))
    leaf_id: str | None = None
    marker_id: str | None = None  # the leaf is not where the file ends: this leaf marker goes last
    report: ImportReport = field(default_factory=ImportReport)
    # the last line, when entries before it hang under it: (its line number, the line number it
    # goes right after: its parent's, 0 for a root, its bytes)
    hoisted: tuple[int, int, bytes] | None = None


def _problem(report: ImportReport, text: str) -> None:
    if len(report.problems) < 5:
        report.problems.append(text)


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise SessionFileError(f"Session file {path} does not exist") from None
    except IsADirectoryError:
        raise SessionFileError(f"{path} is a folder, not a session file") from None
    except OSError as err:
        raise SessionFileError(f"Session file {path} cannot be read: {err.strerror}") from None


def _header(f: BinaryIO, path: Path) -> tuple[SessionHeader, int, int]:
    """(header, lines skipped before it, line number after it), as session_file.parse_header."""
    skipped = number = 0
    content = False
    for line in f:
        number += 1
        if not line.strip():
            continue
        content = True
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            skipped += 1
            continue
        if _is_header(obj):
            return obj, skipped, number + 1
        break  # Pi: the first parsed object must be the header, otherwise the file is not a session
    what = "has no session header on its first line" if content else "is empty"
    raise SessionFileError(f"Session file {path} {what}, so it is not a Pi or treechat session")


def plan_file(path: Path) -> FilePlan | None:
    """The first pass (module doc); None when this file needs the whole-file reader. Raises
    SessionFileError for a file that is not a session."""
    path = Path(path)
    with _open(path) as f:
        header, skipped, start = _header(f, path)
        version = header.get("version")
        if not isinstance(version, int) or version < CURRENT_VERSION:
            return None  # migrated in memory by the whole-file reader
        plan = FilePlan(path, header, start, report=ImportReport(session_id=header["id"], skipped_lines=skipped))
        report, skip = plan.report, plan.skip
        ids: set[str] = set()
        later: dict[str, int] = {}  # parents not seen yet when their child came (later, or nowhere): first line
        tail: list[Any] = []  # the trailing leaf markers, for where the leaf is
        last_entry: str | None = None
        last: tuple[int, bytes, Any] | None = None  # the last entry's line number, bytes and skeleton
        with paused():
            for number, line, clean in _numbered(f, start):
                if line.endswith(b"\n"):
                    line = line[:-1]
                if not line:
                    continue
                try:
                    skel = _skeleton_of(line, clean)
                except (ValueError, RecursionError, *DecodeErrors) as err:
                    if line.isspace():
                        continue
                    report.skipped_lines += 1
                    _problem(report, f"line {number} skipped: {_first_line(err)}")
                    skip.append(number)
                    continue
                eid = skel.id
                if eid in ids:
                    report.duplicate_ids += 1
                    _problem(report, f"line {number} skipped: duplicate entry id {eid}")
                    skip.append(number)
                    continue
                if not eid:
                    report.skipped_lines += 1
                    _problem(report, f"line {number} skipped: an entry needs an id")
                    skip.append(number)
                    continue
                parent = skel.parent_id
                if parent is not None and parent not in ids:
                    later.setdefault(parent, number)
                ids.add(eid)
                plan.entries += 1
                if skel.type == "leaf":
                    tail.append(skel)
                else:
                    tail.clear()
                    last_entry = eid
                    last = (number, line, skel)
            plan.size = f.tell()
        forward = {p: n for p, n in later.items() if p in ids}
        if forward and (tail or last is None or set(forward) != {last[2].id}
                        or not _hoist(plan, last, forward[last[2].id])):
            return None  # a parent after its child, or a cycle: the whole-file reader sorts it out
        _place_leaf(plan, ids, tail, last_entry)
        return plan


def _hoist(plan: FilePlan, last: tuple[int, bytes, Any], first_child: int) -> bool:
    """Plan the last line to be read right after its parent, when that parent comes before the
    first line under it (`first_child`); False otherwise. Reads the file up to there again, a
    line at a time, for where the parent is."""
    number, line, skel = last
    parent = skel.parent_id
    after: int | None = 0 if parent is None else None
    if parent is not None and parent != skel.id:
        skip = set(plan.skip)
        with _open(plan.path) as f:
            for _ in range(plan.body_start - 1):
                f.readline()
            for at, text, clean in _numbered(f, plan.body_start):
                if at >= first_child:
                    break
                if at in skip or not text.strip():
                    continue
                try:
                    if _skeleton_of(text.rstrip(b"\n"), clean).id == parent:
                        after = at
                        break
                except (ValueError, RecursionError, *DecodeErrors):
                    continue
    if after is None:
        return False
    plan.hoisted = (number, after, line)
    return True


def _numbered(f: BinaryIO, start: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, clean) of every line from here on, read a chunk at a time: `clean`
    when its chunk is all ASCII with no escaped surrogate, so the line needs no repair."""
    number = start
    while chunk := f.readlines(_CHUNK):
        whole = b"".join(chunk)
        clean = whole.isascii() and b"\\ud" not in whole and b"\\uD" not in whole
        for line in chunk:
            yield number, line, clean
            number += 1


def _skeleton_of(line: bytes, clean: bool = False) -> Any:
    """A line's skeleton, read as on opening; raises what makes it a skipped line. `clean`: it
    is known to need no repair (_numbered)."""
    if not clean:
        if not line.isascii():
            line = _as_utf8(line)  # a byte that is not UTF-8 reads as U+FFFD, as on opening
        if b"\\ud" in line or b"\\uD" in line:
            line = _without_lone_surrogates(line)
    try:
        return decode_skeleton(line)
    except DecodeErrors:
        return _lenient_skeleton(line)


def _place_leaf(plan: FilePlan, ids: set[str], tail: list[Any], last_entry: str | None) -> None:
    """Where a reader resuming at the last line lands (session_file.effective_leaf), and the
    marker the import ends with when that is not where the file ends."""
    leaf = last_entry
    for marker in reversed(tail):
        if marker.target_id is None or marker.target_id in ids:
            leaf = marker.target_id
            break
    at_end = (tail[-1].target_id if tail else last_entry) if plan.entries else None
    plan.leaf_id = leaf
    if plan.entries > 0 and at_end != leaf:
        plan.marker_id = new_entry_id(ids)


def leaf_marker(plan: FilePlan) -> tuple[str, EntryView] | None:
    """The leaf marker that ends the import when the leaf is not where the file ends."""
    if plan.marker_id is None:
        return None
    stamp = now_iso()
    raw = json.dumps({"type": "leaf", "id": plan.marker_id, "parentId": plan.leaf_id, "timestamp": stamp,
                      "targetId": plan.leaf_id}, separators=(",", ":"))
    return raw, EntryView(type="leaf", id=plan.marker_id, parent_id=plan.leaf_id, timestamp=stamp,
                          target_id=plan.leaf_id)


def kept_lines(plan: FilePlan) -> Iterator[tuple[int, bytes]]:
    """The second pass's lines: (line number, line) of every line the plan keeps, in file order,
    with bytes that are not UTF-8 and half UTF-16 pairs repaired as the first pass read them.
    Lines come a chunk at a time; a chunk that is all ASCII with no escaped surrogate (nearly
    every one) is checked once, not line by line."""
    skip = set(plan.skip)
    number = plan.body_start - 1
    hoisted, after, moved = plan.hoisted if plan.hoisted is not None else (0, -1, b"")
    if after == 0:
        yield hoisted, _repaired(moved)
    with _open(plan.path) as f:
        for _ in range(plan.body_start - 1):
            f.readline()
        while chunk := f.readlines(_CHUNK):
            whole = b"".join(chunk)
            clean = whole.isascii() and b"\\ud" not in whole and b"\\uD" not in whole
            for line in chunk:
                number += 1
                if line.endswith(b"\n"):
                    line = line[:-1]
                if not line or (skip and number in skip) or line.isspace() or number == hoisted:
                    continue
                if not clean:
                    line = _repaired(line)
                yield number, line
                if number == after:
                    yield hoisted, _repaired(moved)


def _repaired(line: bytes) -> bytes:
    """A line as the first pass read it: bytes that are not UTF-8 and half UTF-16 pairs repaired."""
    if line.endswith(b"\n"):
        line = line[:-1]
    if not line.isascii():
        line = _as_utf8(line)
    if b"\\ud" in line or b"\\uD" in line:
        line = _without_lone_surrogates(line)
    return line


def _proven(array: bytes, lines: list[bytes]) -> bool:
    """The batch (`lines`, joined as `array`) is valid by wire_check's stricter decode (and
    pydantic for its deep lines): pydantic's models of every line, 2 s of a 100k import, are then
    never built."""
    if not proven_valid_array(array):
        return False
    for line in lines:
        if deep(line):
            parse_entry(line)  # raises InvalidEntryError: the caller sorts the batch out line by line
    return True


def validated(pending: list[tuple[int, bytes]], report: ImportReport) -> list[tuple[bytes, EntryView]]:
    """(line, view) of each line pydantic accepts (one call for all of them; line by line only
    when that fails, to skip just the bad ones, counted in `report`). Its caller, the importing
    reader, pauses the cyclic GC around the batch."""
    bad: set[int] = set()
    lines = [line for _, line in pending]
    array = b"[" + b",".join(lines) + b"]"
    proven = False
    try:
        proven = _proven(array, lines)
        if not proven:
            parse_entries_json(array)
    except (InvalidEntryError, ValueError, RecursionError):
        for number, line in pending:
            try:
                parse_entry(line)
            except (ValueError, RecursionError) as err:
                bad.add(number)
                report.skipped_lines += 1
                _problem(report, f"line {number} skipped: {_first_line(err)}")
    if proven:
        try:  # the views of the whole batch in one call (a view is laxer than the proof)
            return list(zip(lines, decode_views(array), strict=True))
        except DecodeErrors:
            pass  # not expected; line by line below says which
    out = []
    for number, line in pending:
        if number in bad:
            continue
        try:
            view = decode_view(line)
        except DecodeErrors:
            view = view_of_entry(parse_entry(line))  # lax values pydantic accepted
        out.append((line, view))
    return out
