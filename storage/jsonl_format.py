"""Pi's JSONL session file: reading any version (v1–v3, migrated in memory), writing v3.

A file is a header line `{"type":"session","version":3,"id",...}` and one entry per line. Reading
is one pass; lines that are not JSON or not a valid entry are skipped and counted, never fatal.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .base import ImportReport, SessionFileError
from .index import entry_json, gc_paused
from .model import Entry, InvalidEntryError, LeafEntry, new_entry_id, parse_entry

CURRENT_VERSION = 3
_MAX_PROBLEMS = 5


@dataclass
class ScannedFile:
    """Everything one pass over a session file yields."""

    header: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)
    raws: list[str | bytes] = field(default_factory=list)  # each entry's JSON, as it is (to be) stored
    report: ImportReport = field(default_factory=ImportReport)
    ends_with_newline: bool = True

    @property
    def leaf_id(self) -> str | None:
        return effective_leaf(self.entries)

    @property
    def migrated(self) -> bool:
        return self.report.migrated_from is not None


def effective_leaf(entries: Sequence[Entry]) -> str | None:
    """Where a reader that resumes at the last line lands: the last entry, or a marker's target."""
    if not entries:
        return None
    last = entries[-1]
    return last.target_id if isinstance(last, LeafEntry) else last.id


def _is_header(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def _problem(report: ImportReport, text: str) -> None:
    if len(report.problems) < _MAX_PROBLEMS:
        report.problems.append(text)


class _Migrator:
    """Pi's v1→v2→v3 migration, applied line by line as the file is read."""

    def __init__(self, version: int):
        self.version = version
        self.ids_by_position: list[str | None] = [None]  # position 0 is the header
        self.previous_id: str | None = None
        self.taken: set[str] = set()

    def apply(self, obj: dict[str, Any]) -> None:
        if self.version < 2:
            new_id = new_entry_id(self.taken)
            self.taken.add(new_id)
            obj["id"] = new_id
            obj["parentId"] = self.previous_id
            self.previous_id = new_id
            self.ids_by_position.append(new_id)
            index = obj.get("firstKeptEntryIndex") if obj.get("type") == "compaction" else None
            if isinstance(index, int) and not isinstance(index, bool):
                # Counted over the parsed lines including the header; only earlier entries have ids.
                if 0 < index < len(self.ids_by_position):
                    obj["firstKeptEntryId"] = self.ids_by_position[index]
                del obj["firstKeptEntryIndex"]
        if self.version < 3 and obj.get("type") == "message":
            message = obj.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def scan_session_file(path: Path) -> ScannedFile:
    """One pass over a session file. Raises SessionFileError if it is missing or has no header."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionFileError(f"Session file {path} does not exist") from None
    except OSError as err:
        raise SessionFileError(f"Session file {path} cannot be read: {err.strerror}") from None
    lines = data.split(b"\n")
    scanned: ScannedFile | None = None
    migrator: _Migrator | None = None
    skipped_before_header = 0
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        if scanned is None:
            try:
                obj = json.loads(line)
            except ValueError:
                skipped_before_header += 1
                continue
            if not _is_header(obj):
                # Pi: the first parsed object must be the header, otherwise the file is not a session.
                break
            version = obj.get("version") if isinstance(obj.get("version"), int) else 1
            scanned = ScannedFile(header=obj, report=ImportReport(session_id=obj["id"]))
            scanned.report.skipped_lines = skipped_before_header
            if version < CURRENT_VERSION:
                migrator = _Migrator(version)
                scanned.report.migrated_from = version
                obj["version"] = CURRENT_VERSION
            continue
        report = scanned.report
        try:
            if migrator is None:
                entry = parse_entry(line)
                raw: str | bytes = line
            else:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise InvalidEntryError("a JSON value that is not an object")
                migrator.apply(obj)
                entry = parse_entry(obj)
                raw = entry_json(entry)
        except (ValueError, InvalidEntryError) as err:
            report.skipped_lines += 1
            _problem(report, f"line {number} skipped: {str(err).splitlines()[0]}")
            continue
        if entry.id in seen:
            report.duplicate_ids += 1
            _problem(report, f"line {number} skipped: duplicate entry id {entry.id}")
            continue
        seen.add(entry.id)
        scanned.entries.append(entry)
        scanned.raws.append(raw)
    if scanned is None:
        what = "is empty" if not data.strip() else "has no session header on its first line"
        raise SessionFileError(f"Session file {path} {what}, so it is not a Pi or treechat session")
    scanned.report.entries = len(scanned.entries)
    scanned.ends_with_newline = data.endswith(b"\n") or not data
    return scanned


def read_session_file(path: Path | str) -> tuple[dict[str, Any], list[Entry], str | None, ImportReport]:
    """Header, entries, leaf and what was skipped, for any Pi v1–v3 file (migrated in memory)."""
    with gc_paused():
        scanned = scan_session_file(Path(path))
    return scanned.header, scanned.entries, scanned.leaf_id, scanned.report


def file_lines(header: dict[str, Any], raws: Sequence[str | bytes]) -> bytes:
    """The bytes of a whole file: header and entry lines, each ending in a newline."""
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    body = [r if isinstance(r, bytes) else r.encode() for r in raws]
    return b"\n".join([head, *body]) + b"\n"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_entries(entries: Sequence[Entry], leaf_id: str | None) -> list[Entry]:
    """The entries to write so that a reader resuming at the last line lands on `leaf_id`."""
    out = list(entries)
    if effective_leaf(out) != leaf_id:
        taken = {e.id for e in out}
        out.append(LeafEntry(id=new_entry_id(taken), parent_id=leaf_id, target_id=leaf_id))
    return out


def write_session_file(
    path: Path | str, header: dict[str, Any], entries: Sequence[Entry], leaf_id: str | None
) -> None:
    """Export: a v3 file that Pi (and we) open at `leaf_id` with the same context. Atomic."""
    head = {"type": "session", "version": CURRENT_VERSION, **header}
    head["type"], head["version"] = "session", CURRENT_VERSION
    if not isinstance(head.get("id"), str):
        raise SessionFileError("A session file header needs an id")
    lines = [entry_json(e) for e in export_entries(entries, leaf_id)]
    write_atomic(Path(path), file_lines(head, lines))
