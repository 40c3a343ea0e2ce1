"""The storage commands' work behind `treechat import`, `tree --json` and `export --format jsonl`.

Import takes files and folders (recursively: Pi keeps `~/.pi/agent/sessions/<cwd>/*.jsonl`),
skips what is not a session and what is already imported (same session id; `replace` overwrites),
shows a progress bar on a terminal and ends with one summary line. Tree and export stream: a
100k-entry session is read and written a page at a time, never held whole.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from treechat.storage.base import EntryCursor, SessionCatalog, SessionFileError, SessionStorage, StorageError
from treechat.storage.imports.records import UncheckedLineError, find_session_files, pi_sessions_dir, read_records
from treechat.storage.imports.stream_scan import plan_file
from treechat.storage.model_lite import entry_json
from treechat.storage.session_file import export_header
from treechat.text.sanitize import json_for_terminal, visible_line

from ..export.target import ExportFile
from ..progress import Reporter, is_terminal, progress

if TYPE_CHECKING:  # pydantic's models: imported by the commands that print entries, not by import
    from treechat.storage.base import ImportReport
    from treechat.storage.imports.records import ImportRecords
    from treechat.storage.json_types import SessionHeader
    from treechat.storage.model import Entry

PAGE = 2000  # entries per read when streaming


@dataclass
class ImportSummary:
    imported: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    not_sessions: list[str] = field(default_factory=list)  # files in a folder that are no session (skipped)
    failed: list[str] = field(default_factory=list)
    entries: int = 0
    skipped_lines: int = 0
    damaged: list[str] = field(default_factory=list)  # the files some lines were skipped in
    grown: list[str] = field(default_factory=list)  # already imported, but the file has entries since
    repaired: int = 0
    first_problem: str = ""

    def line(self) -> str:
        n = len(set(self.imported))  # two files of one session (a v1 and its v3 copy) are one session
        parts = [f"imported {n} session{'s' if n != 1 else ''} ({self.entries:,} entries)"]
        if self.already:
            parts.append(f"{len(self.already)} already imported, skipped (--force replaces them)")
        if self.grown:
            shown = ", ".join(self.grown[:3]) + (f" and {len(self.grown) - 3} more" if len(self.grown) > 3 else "")
            parts.append(f"changed in Pi since: {shown} entries (--force re-imports, replacing what treechat "
                         "holds of it, entries added here included)")
        if self.not_sessions:
            count = len(self.not_sessions)
            names = ", ".join(self.not_sessions[:3]) + (f" and {count - 3} more" if count > 3 else "")
            parts.append(f"{count} file{'s' if count != 1 else ''} not a session, skipped ({names})")
        if self.skipped_lines:
            files = ", ".join(self.damaged[:3]) + (f" and {len(self.damaged) - 3} more" if len(self.damaged) > 3 else "")
            parts.append(f"skipped {self.skipped_lines} unreadable line(s) in {files} (first: {self.first_problem})")
        if self.repaired:
            parts.append(f"{self.repaired} parent cycle(s) broken, every entry kept")
        if self.failed:
            shown = "; ".join(self.failed[:3]) + (f"; and {len(self.failed) - 3} more" if len(self.failed) > 3 else "")
            parts.append(f"{len(self.failed)} failed: {shown}")
        return "; ".join(parts)


async def run_import(catalog: SessionCatalog, paths: list[Path], *, force: bool, stdout: TextIO) -> int:
    """Import every session file under `paths`; prints ids (stdout) and one summary line (stderr)."""
    summary = ImportSummary()
    _STOP.clear()
    named = {p for p in paths if not p.is_dir()}  # a file named that is no session is a failure, not a skip
    files: list[Path] = []
    for path, reason in find_session_files(paths):
        if reason is not None:
            summary.failed.append(f"{path}: {reason}")
        else:
            files.append(path)
    sizes = {f: _size(f) for f in files}
    done = 0
    with progress("Importing", total=sum(sizes.values()) or None, unit="bytes") as bar:
        for file in files:
            size = sizes[file]
            bar.update(description=f"Importing {_short(file.name)}")
            one = asyncio.ensure_future(_import_one(catalog, file, force, summary,
                                                    functools.partial(_advance_by, bar, size), named=file in named))
            try:
                await asyncio.shield(one)
            except asyncio.CancelledError:
                # Ctrl+C: the session being written lands whole or not at all (one transaction, already
                # under way in the database's thread, or a streamed import that stops at its next
                # batch and deletes the ones before); wait for which, say what got in, then stop
                _STOP.set()
                try:
                    await one
                except Exception:  # noqa: BLE001 - reported as the interrupted file's failure
                    summary.failed.append(f"{file}: interrupted")
                _report(summary, stdout, f"interrupted after {done + 1} of {len(files)} files")
                raise
            done += 1
    _report(summary, stdout)
    return 1 if summary.failed else 0


def _report(summary: ImportSummary, stdout: TextIO, interrupted: str = "") -> None:
    listed = list(dict.fromkeys(summary.imported + summary.already))  # one id per session (a v1 and its v3 copy)
    if not is_terminal(stdout) or len(listed) <= 10:
        for sid in listed:
            stdout.write(visible_line(sid) + "\n")  # an id comes from the file: shown, never obeyed
    line = summary.line() + (f"; {interrupted}" if interrupted else "")
    print(f"treechat: {visible_line(line)}", file=sys.stderr)  # file names: shown, never obeyed


def _advance_by(bar: Reporter, size: int, part: float) -> None:
    bar.advance(size * part)


class _FileShare:
    """One file's share of the progress bar (1.0 in all): never more than that, whichever thread
    reports (SQLite's loader reports from two) and however often (a retried import reports again)."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        self._advance, self._left, self._lock = advance, 1.0, threading.Lock()

    def __call__(self, part: float) -> None:
        with self._lock:
            part = min(part, self._left)
            self._left -= part
        if part > 0:
            self._advance(part)

    def finish(self) -> None:
        self(1.0)


def _unreadable(file: Path, err: Exception, summary: ImportSummary, advance: Callable[[float], None],
                named: bool) -> None:
    """A file that could not be read, streamed or whole: not a session (skipped in a folder, a
    failure when named), or one failure named."""
    advance(1.0)
    if isinstance(err, SessionFileError):
        if "not a Pi or treechat session" in str(err) and not named:
            summary.not_sessions.append(file.name)
        else:
            summary.failed.append(str(err))
    elif isinstance(err, (MemoryError, OSError)):
        summary.failed.append(f"{file}: {err}")
    else:
        summary.failed.append(f"{file}: could not be read ({type(err).__name__}: {err})")


async def _import_one(
    catalog: SessionCatalog, file: Path, force: bool, summary: ImportSummary, advance_bar: Callable[[float], None],
    *, named: bool = False
) -> None:
    advance = _FileShare(advance_bar)
    if _streams(catalog):
        try:
            done = await _import_streamed(catalog, file, force, summary, advance)
        except Exception as err:  # noqa: BLE001 - a file we fail to read is one failure, not the end of the import
            _unreadable(file, err, summary, advance, named)
            return
        if done:
            return
    try:
        header, records, report = read_records(file, check_later=True)
    except Exception as err:  # noqa: BLE001 - a file we fail to read is one failure, not the end of the import
        _unreadable(file, err, summary, advance, named)
        return
    advance(0.5)
    sid = header["id"]
    if not force and await catalog.has_session(sid):
        summary.already.append(sid)
        in_file = sum(1 for v in records.views if v.type != "leaf")
        stored = (await (await catalog.open(sid)).get_session_stats()).entry_count
        if in_file > stored:  # Pi went on with it since: say so rather than skip it silently
            summary.grown.append(f"{file.name} has {in_file - stored:,} more")
        advance.finish()
        return
    n = max(len(records), 1)

    def progress(k: int) -> None:
        advance(0.5 * k / n)

    try:
        try:
            storage, report = await _import_records(catalog, header, records, report, force, progress)
        except UncheckedLineError:
            # A line the quick read let through is not a valid entry (nothing was stored): read
            # the file again, validating every line, so that line is skipped and counted.
            header, records, report = read_records(file)
            storage, report = await _import_records(catalog, header, records, report, force, progress)
    except StorageError as err:
        summary.failed.append(f"{file}: {err}")
        advance.finish()
        return
    except Exception as err:  # noqa: BLE001 - as above: nothing of this file was stored (one transaction)
        summary.failed.append(f"{file}: could not be imported ({type(err).__name__}: {err})")
        advance.finish()
        return
    advance.finish()  # whatever the backend did not report
    summary.imported.append(storage.session_id)
    summary.entries += report.entries
    summary.repaired += report.repaired
    if report.skipped:
        summary.skipped_lines += report.skipped
        summary.damaged.append(file.name)
        if not summary.first_problem and report.problems:
            summary.first_problem = f"{file.name} {report.problems[0]}"


def _streams(catalog: SessionCatalog) -> bool:
    from treechat.storage.sqlite import SqliteCatalog

    return isinstance(catalog, SqliteCatalog)


async def _import_streamed(catalog: SessionCatalog, file: Path, force: bool, summary: ImportSummary,
                           advance: _FileShare) -> bool:
    """SQLite: the file planned in one pass and stored in batches, never held whole (a 1M-entry
    file in a few hundred MB). False when the file needs the whole-file reader (an older version,
    a parent after its child): the caller reads it as before."""
    from treechat.storage.sqlite import SqliteCatalog
    from treechat.storage.sqlite.stream_import import ImportStopped

    assert isinstance(catalog, SqliteCatalog)
    plan = await asyncio.to_thread(plan_file, file)
    if plan is None:
        return False
    sid = plan.header["id"]
    if not force and await catalog.has_session(sid):
        summary.already.append(sid)
        stored = (await (await catalog.open(sid)).get_session_stats()).entry_count
        if plan.entries > stored:  # Pi went on with it since: say so rather than skip it silently
            summary.grown.append(f"{file.name} has {plan.entries - stored:,} more")
        advance.finish()
        return True
    try:
        storage, report = await catalog.import_plan(plan, replace=force, on_progress=advance, stop=_STOP.is_set)
    except ImportStopped:
        summary.failed.append(f"{file}: interrupted (nothing of it was kept)")
        advance.finish()
        return True
    except StorageError as err:
        summary.failed.append(f"{file}: {err}")
        advance.finish()
        return True
    except Exception as err:  # noqa: BLE001 - nothing of this file was kept (stream_import.py)
        summary.failed.append(f"{file}: could not be imported ({type(err).__name__}: {err})")
        advance.finish()
        return True
    advance.finish()
    summary.imported.append(storage.session_id)
    summary.entries += report.entries
    if report.skipped:
        summary.skipped_lines += report.skipped
        summary.damaged.append(file.name)
        if not summary.first_problem and report.problems:
            summary.first_problem = f"{file.name} {report.problems[0]}"
    return True


# Set by Ctrl+C: a streamed import stops at its next batch and deletes what it stored.
_STOP = threading.Event()


async def _import_records(catalog: SessionCatalog, header: SessionHeader, records: ImportRecords, report: ImportReport,
                          replace: bool, progress: Callable[[int], None]) -> tuple[SessionStorage, ImportReport]:
    """SQLite reports entries written (its import is the long one); the others are quick."""
    from treechat.storage.sqlite import SqliteCatalog

    if isinstance(catalog, SqliteCatalog):
        return await catalog.import_records(header, records, report, replace=replace, on_progress=progress)
    return await catalog.import_records(header, records, report, replace=replace)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def from_pi_folder() -> Path:
    folder = pi_sessions_dir()
    if not folder.is_dir():
        raise StorageError(
            f"Pi's sessions folder {folder} does not exist (set PI_CODING_AGENT_SESSION_DIR or PI_CODING_AGENT_DIR "
            "if Pi keeps it elsewhere, or give the folder: treechat import PATH)"
        )
    return folder


# ---------------------------------------------------------------- streaming reads


async def pages(storage: SessionStorage) -> AsyncIterator[Entry]:
    """Every entry in append order, PAGE at a time."""
    after: str | None = None
    while True:
        page = await storage.get_entries(EntryCursor(after_id=after, limit=PAGE))
        if not page:
            return
        for entry in page:
            yield entry
        after = page[-1].id


async def _total(storage: SessionStorage) -> int | None:
    stats = await storage.get_session_stats()
    return stats.entry_count or None


async def stream_tree(storage: SessionStorage, out: TextIO) -> None:
    """`tree --json`: {"leafId", "entries": [...]} with every entry's current label, streamed,
    one entry per line (compact: 100k entries print in seconds, and grep finds them). A session
    made from another (a fork, a sub-agent's) names it: "parentSessionId", "parentEntryId"."""
    from treechat.storage.model import dump

    leaf_id = await storage.get_leaf_id()
    labels = await storage.get_labels()
    meta = await storage.get_metadata()
    out.write('{\n  "leafId": ' + json.dumps(leaf_id) + ",\n")
    if meta.parent_session_id:
        out.write(f'  "parentSessionId": {json.dumps(meta.parent_session_id)},\n'
                  f'  "parentEntryId": {json.dumps(meta.parent_entry_id)},\n')
    out.write('  "entries": [')
    first = True
    with progress("Reading the tree", total=await _total(storage), unit="entries") as bar:
        async for entry in pages(storage):
            data = dump(entry)
            # A label entry's own `label` field is its content; every other entry gets its
            # current label (null when none) under the same key.
            if entry.type != "label":
                data["label"] = labels.get(entry.id)
            out.write(("\n    " if first else ",\n    ") + json.dumps(data, ensure_ascii=False))
            first = False
            bar.advance(1)
    out.write("\n  ]\n}\n" if not first else "]\n}\n")


async def stream_export(storage: SessionStorage, output: str | None, stdout: TextIO, *,
                        show_progress: bool = True, raw: bool = False) -> None:
    """`export --format jsonl`: a v3 file that Pi (and we) open at this session's leaf. To a file
    it is atomic, into a device or FIFO it streams (export_target.py); to stdout it streams. The
    app's `/export` uses it too, without the progress bar (its terminal belongs to the app). A
    file that cannot be written is an OutputError naming `output`; a terminal named as the file
    gets what stdout would (`raw`: byte for byte).

    Pi 0.73.1 resumes a file at its last line and shows every line in its tree (a `leaf` marker
    is an empty row there), so the file holds no `leaf` entry: the leaf entry itself is written
    last, wherever it was appended (Pi and we link entries by id, in any order). A leaf before
    the first entry cannot be said that way: the file ends with its first root entry instead
    (a settings entry in a session treechat began: the same empty conversation). A tools record
    (`active_tools_change`, also an empty row in Pi) is written as the `custom` entry Pi hides
    and we read as the same record (model.TOOLS_RECORD)."""
    from treechat.storage.model import TOOLS_RECORD, ActiveToolsChangeEntry, CustomEntry, LeafEntry

    def line_of(entry: Entry) -> str:
        if isinstance(entry, ActiveToolsChangeEntry):
            entry = CustomEntry(id=entry.id, parent_id=entry.parent_id, timestamp=entry.timestamp,
                                custom_type=TOOLS_RECORD, active_tool_names=list(entry.active_tool_names))
        return entry_json(entry)

    meta = await storage.get_metadata()
    leaf_id = await storage.get_leaf_id()
    header = export_header({"id": meta.id, "timestamp": meta.created_at, "cwd": meta.cwd})
    target = await ExportFile.open(Path(output)) if output else None
    safe = target is not None and target.is_terminal and not raw

    def write(line: str) -> None:
        if target is not None:
            target.write((json_for_terminal(line) if safe else line).encode() + b"\n")
        else:
            stdout.write(line + "\n")

    try:
        write(json.dumps(header, separators=(",", ":"), ensure_ascii=False))
        held: Entry | None = None  # the entry to end the file with: the leaf
        total = await _total(storage) if show_progress else None
        with progress("Exporting", total=total, unit="entries", enabled=show_progress) as bar:
            async for entry in pages(storage):
                bar.advance(1)
                if isinstance(entry, LeafEntry):
                    continue
                if held is None and (entry.id == leaf_id or leaf_id is None and entry.parent_id is None):
                    held = entry
                    continue
                write(line_of(entry))
        if held is not None:
            write(line_of(held))
        if target is not None:
            target.commit()
            target = None
    finally:
        if target is not None:  # not committed: no temporary file stays, whatever failed
            target.discard()


async def run_reindex(catalog: SessionCatalog) -> str:
    """`treechat reindex`: the search index rebuilt with a progress bar; the summary line."""
    rebuild = getattr(catalog, "rebuild_search_index", None)  # SQLite's and PostgreSQL's
    count = getattr(catalog, "count_entries", None)
    if rebuild is None or count is None:
        return "Nothing to rebuild: this store keeps no search index (search reads the sessions themselves)."
    total = await count()
    started = time.perf_counter()
    with progress("Rebuilding the search index", total=total or None, unit="entries") as bar:
        read, indexed = await rebuild(bar.advance)
    took = time.perf_counter() - started
    return f"Search index rebuilt: {indexed:,} of {read:,} entries hold searchable text ({took:.1f} s)."
