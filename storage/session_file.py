"""Pi's JSONL session file: reading any version (v1–v3, migrated in memory), writing v3.

A file is a header line `{"type":"session","version":3,"id",...}` and one entry per line. Reading
is one pass that decodes only each line's skeleton (`views.Skeleton`) or, for an import, its view
plus a full pydantic validation. Lines that are not JSON, not a valid entry, nested deeper than the
parsers allow, or duplicates are skipped and counted, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ImportReport, SessionFileError
from .gc_policy import paused
from .json_types import SessionHeader
from .model_lite import InvalidEntryError, entry_json, new_entry_id
from .on_demand import parse_entry, view_of_entry
from .special import NotRegularError, fsync_dir, open_regular
from .views import DecodeErrors, Skeleton, decode_skeleton, decode_view, skeleton_of
from .well_formed import well_formed_text

if TYPE_CHECKING:  # (annotations only: a streamed import runs without pydantic's models)
    from .model import Entry

CURRENT_VERSION = 3
_MAX_PROBLEMS = 5
FILE_MODE = 0o600
DIR_MODE = 0o700


@dataclass
class ScannedFile:
    """Everything one pass over a session file yields: per entry its line, skeleton (or view)
    and line number, in file order."""

    header: SessionHeader
    raws: list[str | bytes] = field(default_factory=list)
    skels: list[Any] = field(default_factory=list)  # Skeleton, or EntryView when scanned in full
    lines: list[int] = field(default_factory=list)
    report: ImportReport = field(default_factory=ImportReport)
    ends_with_newline: bool = True
    size: int = 0  # bytes read
    line_count: int = 0  # newlines in what was read
    positions: dict[str, int] | None = None  # id → position, when the fast scan built it
    checked: bool = True  # False: a full scan that left pydantic's validation to the importer

    @property
    def leaf_id(self) -> str | None:
        return effective_leaf(self.skels)

    @property
    def migrated(self) -> bool:
        return self.report.migrated_from is not None


def effective_leaf(entries: Sequence[Any]) -> str | None:
    """Where a reader that resumes at the last line lands: the last entry, or a marker's target.
    A marker naming an entry that is not there is ignored (the entry before it counts)."""
    known = {e.id for e in entries} if entries and entries[-1].type == "leaf" else set()
    for e in reversed(entries):
        if e.type != "leaf":
            entry_id: str = e.id
            return entry_id
        target: str | None = e.target_id
        if target is None or target in known:
            return target
    return None


def _is_header(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def _problem(report: ImportReport, text: str) -> None:
    if len(report.problems) < _MAX_PROBLEMS:
        report.problems.append(text)


def migration_id(session_id: str, position: int, taken: set[str]) -> str:
    """Ids for v1 entries, which have none. Deterministic (Pi draws random ones): two processes
    migrating the same file in memory agree on every id, so neither's leaf is lost when the other
    rewrites the file."""
    for attempt in range(100):
        digest = hashlib.blake2s(f"{session_id}\0{position}\0{attempt}".encode(), digest_size=4).hexdigest()
        if digest not in taken:
            return digest
    return new_entry_id(taken)


class _Migrator:
    """Pi's v1→v2→v3 migration, applied line by line as the file is read."""

    def __init__(self, version: int, session_id: str):
        self.version = version
        self.session_id = session_id
        self.ids_by_position: list[str | None] = [None]  # position 0 is the header
        self.previous_id: str | None = None
        self.taken: set[str] = set()

    def apply(self, obj: SessionHeader) -> None:
        if self.version < 2:
            new_id = migration_id(self.session_id, len(self.ids_by_position), self.taken)
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


def _first_line(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "nested too deeply"
    text = str(err).splitlines()
    return text[0] if text else type(err).__name__


def read_bytes(path: Path) -> bytes:
    try:
        fd = open_regular(Path(path))  # a FIFO would block, the zero device never end
        with os.fdopen(fd, "rb") as f:
            return f.read()
    except NotRegularError as err:
        raise SessionFileError(f"{path} is {err.kind}, not a session file; not read") from None
    except FileNotFoundError:
        raise SessionFileError(f"Session file {path} does not exist") from None
    except IsADirectoryError:
        raise SessionFileError(f"{path} is a folder, not a session file") from None
    except OSError as err:
        raise SessionFileError(f"Session file {path} cannot be read: {err.strerror}") from None


def parse_header(data: bytes, path: Path | str = "") -> tuple[SessionHeader, int, int]:
    """(header, skipped lines before it, offset after its line). SessionFileError if none."""
    skipped, start = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end]
        start = end + 1
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            skipped += 1
            continue
        if _is_header(obj):
            return obj, skipped, start
        break  # Pi: the first parsed object must be the header, otherwise the file is not a session
    what = "is empty" if not data.strip() else "has no session header on its first line"
    raise SessionFileError(f"Session file {path} {what}, so it is not a Pi or treechat session")


def scan_lines(
    scanned: ScannedFile,
    data: bytes,
    first_line: int,
    *,
    full: bool = False,
    check: bool = True,
    migrator: _Migrator | None = None,
    seen: set[str] | None = None,
) -> None:
    """Append the entries of `data` (whole lines) to `scanned`. `full`: views and a pydantic
    validation of every line (import); otherwise skeletons only (opening). `full` without `check`:
    a clean file's views only, its validation left to the caller (`scanned.checked` is False);
    any other file is scanned and validated as with `check`."""
    report = scanned.report
    raws, skels, numbers = scanned.raws, scanned.skels, scanned.lines
    seen = seen if seen is not None else set(e.id for e in skels)
    decode: Callable[[Any], Any] = decode_view if full else decode_skeleton
    split = data.split(b"\n")
    scanned.line_count = first_line - 1 + len(split) - 1
    if migrator is None and not skels and (not full or not check):
        if _fast_scan(scanned, split, first_line, decode_view if full else decode_skeleton):
            scanned.checked = not full
            return
    for number, line in enumerate(split, start=first_line):
        if not line:
            continue
        try:
            line, skel = _read_line(line, decode, full=full, migrator=migrator)
        except (ValueError, RecursionError, *DecodeErrors) as err:
            if line.isspace():
                continue
            report.skipped_lines += 1
            _problem(report, f"line {number} skipped: {_first_line(err)}")
            continue
        if skel.id in seen:
            report.duplicate_ids += 1
            _problem(report, f"line {number} skipped: duplicate entry id {skel.id}")
            continue
        if not skel.id:
            report.skipped_lines += 1
            _problem(report, f"line {number} skipped: an entry needs an id")
            continue
        seen.add(skel.id)
        raws.append(line)
        skels.append(skel)
        numbers.append(number)
    report.entries = len(skels)


def _read_line(line: bytes, decode: Callable[[Any], Any], *, full: bool,
               migrator: _Migrator | None) -> tuple[bytes, Any]:
    """One line as stored (UTF-8, no lone surrogates, migrated) and its skeleton or view; raises
    what `scan_lines` reports as a skipped line."""
    if not line.isascii():
        line = _as_utf8(line)
    if b"\\ud" in line or b"\\uD" in line:
        line = _without_lone_surrogates(line)
    if migrator is not None:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise InvalidEntryError("a JSON value that is not an object")
        migrator.apply(obj)
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    if full:
        entry = parse_entry(line)
        try:
            return line, decode(line)
        except DecodeErrors:
            return line, view_of_entry(entry)  # lax values pydantic accepted
    try:
        return line, decode(line)
    except DecodeErrors:
        return line, _lenient_skeleton(line)


def _as_utf8(line: bytes) -> bytes:
    """A line with a byte that is not UTF-8 (one bad byte in a message) is read as Pi (Node) reads
    it, that byte as U+FFFD, rather than lost; a well-formed line comes back as it was."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("utf-8", "replace").encode("utf-8")
    return line


def _without_lone_surrogates(line: bytes) -> bytes:
    """A line whose JSON escapes half a UTF-16 pair ("\\ud83d" alone: JSON.stringify writes what a
    model sent): neither decoder takes it, so the line is rewritten with U+FFFD for each half (as
    a live append stores it). Lines that only escape whole pairs come back as they were."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return line  # reported as the line it is
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return well_formed_text(text).encode("utf-8")
    return line


def _fast_scan(scanned: ScannedFile, split: list[bytes], first_line: int, decode: Callable[[bytes], Any]) -> bool:
    """The common case, a clean file, in a few C-level passes: every line decodes, no blank line
    but the last, no duplicate id. False (nothing changed) when any of that fails."""
    raws = split[:-1] if split and not split[-1] else split
    try:
        skels = [decode(line) for line in raws]
    except (*DecodeErrors, ValueError):
        return False
    ids = [s.id for s in skels]
    positions = dict(zip(ids, range(len(ids))))
    if len(positions) != len(skels) or "" in positions:
        return False
    scanned.positions = positions
    scanned.raws, scanned.skels = raws, skels  # type: ignore[assignment]
    scanned.lines = range(first_line, first_line + len(raws))  # type: ignore[assignment]
    scanned.report.entries = len(skels)
    return True


def _lenient_skeleton(line: bytes) -> Skeleton:
    """A skeleton for a line the fast decoder refused but pydantic accepts (e.g. a message that is
    not an object in an unknown entry type); pydantic's error for a line that is no entry at all."""
    return skeleton_of(view_of_entry(parse_entry(line)))


def scan_bytes(data: bytes, path: Path | str = "", *, full: bool = False, check: bool = True) -> ScannedFile:
    """A whole file's bytes read as `scan_lines` says, after its header (migrated if older)."""
    header, skipped, offset = parse_header(data, path)
    raw_version = header.get("version")
    version: int = raw_version if isinstance(raw_version, int) else 1
    scanned = ScannedFile(header=header, report=ImportReport(session_id=header["id"]))
    scanned.report.skipped_lines = skipped
    migrator = None
    if version < CURRENT_VERSION:
        migrator = _Migrator(version, header["id"])
        scanned.report.migrated_from = version
        header["version"] = CURRENT_VERSION
    first_line = data.count(b"\n", 0, offset) + 1
    body = data[offset:]
    # The last line of a file written by a killed process may be torn: it is read (and skipped
    # if incomplete) like any other, but a writer must start its line on a fresh one.
    with paused():  # a 100k-entry file makes 10^5 skeletons and no cycles (gc_policy)
        scan_lines(scanned, body, first_line, full=full, check=check, migrator=migrator)
    scanned.ends_with_newline = data.endswith(b"\n") or not data
    scanned.size = len(data)
    return scanned


def scan_session_file(path: Path, *, full: bool = False, check: bool = True) -> ScannedFile:
    """One pass over a session file. Raises SessionFileError if it is missing or has no header."""
    return scan_bytes(read_bytes(Path(path)), path, full=full, check=check)


def read_session_file(path: Path | str) -> tuple[SessionHeader, list[Entry], str | None, ImportReport]:
    """Header, validated entries, leaf and what was skipped, for any Pi v1–v3 file."""
    from .model import parse_entry as validate  # every line becomes a model: no hand-on through model_lite per line

    scanned = scan_session_file(Path(path), full=True)
    with paused():
        entries = [validate(r) for r in scanned.raws]
    return scanned.header, entries, scanned.leaf_id, scanned.report


def file_lines(header: SessionHeader, raws: Sequence[str | bytes]) -> bytes:
    """The bytes of a whole file: header and entry lines, each ending in a newline."""
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    body = [r if isinstance(r, bytes) else r.encode() for r in raws]
    return b"\n".join([head, *body]) + b"\n"


def ensure_dir(directory: Path, private: bool = False) -> None:
    """Create a folder (0700). `private`: an existing one of ours is made 0700 too (older
    versions left the sessions folder 0755)."""
    directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if private:
        try:
            st = directory.stat()
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                directory.chmod(DIR_MODE)
        except OSError:
            pass


def write_atomic(path: Path, data: bytes | Sequence[bytes], *, mode: int = FILE_MODE) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never half: a new
    file, fsync'd, renamed over the old one (and the folder fsync'd so the rename survives a crash)."""
    ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            for chunk in [data] if isinstance(data, bytes) else data:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def export_entries(entries: Sequence[Entry], leaf_id: str | None) -> list[Entry]:
    """The entries to write so that a reader resuming at the last line lands on `leaf_id`."""
    from .model import LeafEntry  # (these are models: pydantic is loaded)

    out = list(entries)
    last = out[-1] if out else None
    natural = None if last is None else (last.target_id if isinstance(last, LeafEntry) else last.id)
    if natural != leaf_id:
        taken = {e.id for e in out}
        out.append(LeafEntry(id=new_entry_id(taken), parent_id=leaf_id, target_id=leaf_id))
    return out


def export_header(header: SessionHeader) -> SessionHeader:
    head = {"type": "session", "version": CURRENT_VERSION, **header}
    head["type"], head["version"] = "session", CURRENT_VERSION
    if not isinstance(head.get("id"), str):
        raise SessionFileError("A session file header needs an id")
    return head


def write_session_file(
    path: Path | str, header: SessionHeader, entries: Sequence[Entry], leaf_id: str | None
) -> None:
    """Export: a v3 file that Pi (and we) open at `leaf_id` with the same context. Atomic."""
    lines = [entry_json(e) for e in export_entries(entries, leaf_id)]
    write_atomic(Path(path), file_lines(export_header(header), lines), mode=0o644)

