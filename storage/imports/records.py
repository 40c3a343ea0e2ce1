"""Bulk import shared by every backend: records prepared once (ids unique, cycles broken, leaf
marked), read from Pi files in one pass, and the discovery of session files in folders.

A record is an entry's JSON line plus its `EntryView`; backends store the line as it is and
compute everything else (tree, aggregates, search text) from the view, never building pydantic
models for 100k entries. Each line is still validated by pydantic once: while reading, or, for a
clean file read with `check_later`, by the backend while it stores (SQLite does it on a second
core while its search index is built) — a line that fails then makes the import raise
`UncheckedLineError` with nothing stored, and the caller reads the file again, validating.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..base import EntryNotFoundError, ImportReport
from ..gc_policy import paused
from ..json_types import SessionHeader
from ..model_lite import entry_json, new_entry_id, now_iso
from ..session_file import effective_leaf, scan_session_file
from ..special import special_kind
from ..tree.cycles import cycle_breaks
from ..views import EntryView

if TYPE_CHECKING:
    from ..model import Entry

Raw = str | bytes


class UncheckedLineError(Exception):
    """A line of records read with `check_later` is not a valid entry: the import stored nothing;
    read the file again without `check_later` (the line is then skipped and counted)."""


@dataclass
class ImportRecords:
    """Entries ready to store: each id once, no parent cycle, ending where the leaf is.
    `unchecked`: the lines have not been validated yet (`read_records(check_later=True)`)."""

    raws: list[Raw] = field(default_factory=list)
    views: list[EntryView] = field(default_factory=list)
    leaf_id: str | None = None
    unchecked: bool = False

    def __len__(self) -> int:
        return len(self.views)

    def check(self) -> None:
        """Validate every line with pydantic (once); UncheckedLineError names the first bad one."""
        if not self.unchecked:
            return
        from ..model import parse_entry as validate  # every line: no hand-on through model_lite per line

        with paused():
            for raw in self.raws:
                try:
                    validate(raw)
                except (ValueError, RecursionError) as err:
                    raise UncheckedLineError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
        self.unchecked = False


def _note(report: ImportReport, text: str) -> None:
    if len(report.problems) < 5:
        report.problems.append(text)


def prepare_records(
    pairs: Sequence[tuple[Raw, EntryView]], leaf_id: str | None, report: ImportReport, *, natural: bool = False
) -> ImportRecords:
    """Dedupe (a later duplicate id is skipped and counted), break parent cycles (the entry of the
    cycle that comes first becomes a root: every entry is kept, the session always builds a
    context) and end with a leaf marker when `leaf_id` is not where a reader would resume.
    `natural`: the leaf is wherever the entries end (a file's own leaf)."""
    raws: list[Raw] = []
    views: list[EntryView] = []
    seen: set[str] = set()
    for raw, view in pairs:
        if view.id in seen:
            report.duplicate_ids += 1
            _note(report, f"duplicate entry id {view.id} skipped")
            continue
        seen.add(view.id)
        raws.append(raw)
        views.append(view)
    if natural:
        leaf_id = effective_leaf(views)
    elif leaf_id is not None and leaf_id not in seen:
        raise EntryNotFoundError(leaf_id)
    _break_cycles(raws, views, report)
    report.entries = len(views)
    last = views[-1] if views else None
    at_end = None if last is None else (last.target_id if last.type == "leaf" else last.id)
    if views and at_end != leaf_id:
        # Our files (like Pi's) resume at the last line, so a different leaf needs a marker.
        marker_id, stamp = new_entry_id(seen), now_iso()
        marker = {"type": "leaf", "id": marker_id, "parentId": leaf_id, "timestamp": stamp, "targetId": leaf_id}
        raws.append(json.dumps(marker, separators=(",", ":")))
        views.append(EntryView(type="leaf", id=marker_id, parent_id=leaf_id, timestamp=stamp, target_id=leaf_id))
    return ImportRecords(raws, views, leaf_id)


def views_of(entries: Sequence[Entry]) -> list[tuple[str, EntryView]]:
    """(line, view) pairs of already-validated entries, for `prepare_records` (a fork, a copy)."""
    from ..model_views import view_of_model  # (these are models: pydantic is loaded; one import, not one a view)

    return [(entry_json(e), view_of_model(e)) for e in entries]


def _break_cycles(raws: list[Raw], views: list[EntryView], report: ImportReport) -> None:
    for k, what in cycle_breaks(views):
        view = views[k]
        _note(report, f"entry {view.id} {what}; it is kept as a root")
        report.repaired += 1
        obj = json.loads(raws[k])
        obj["parentId"] = None
        raws[k] = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        view.parent_id = None


def read_records(path: Path, *, check_later: bool = False) -> tuple[SessionHeader, ImportRecords, ImportReport]:
    """A Pi/treechat session file as records (one pass, every line validated). SessionFileError
    when it is not a session file. `check_later`: a clean file's lines are left for the backend to
    validate (`ImportRecords.unchecked`); see the module's docstring."""
    scanned = scan_session_file(path, full=True, check=not check_later)
    report = scanned.report
    with paused():
        records = prepare_records(list(zip(scanned.raws, scanned.skels)), None, report, natural=True)
    records.unchecked = not scanned.checked
    return scanned.header, records, report


# ---------------------------------------------------------------- finding session files


def pi_sessions_dir() -> Path:
    """Pi's sessions folder, found as Pi 0.73 finds it: `$PI_CODING_AGENT_SESSION_DIR`, else
    `sessionDir` in its settings.json, else `sessions` in its agent folder
    (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`)."""
    agent = os.environ.get("PI_CODING_AGENT_DIR")
    base = Path(agent).expanduser() if agent else Path.home() / ".pi" / "agent"
    chosen = os.environ.get("PI_CODING_AGENT_SESSION_DIR") or _settings_session_dir(base / "settings.json")
    return Path(chosen).expanduser() if chosen else base / "sessions"


def _settings_session_dir(settings: Path) -> str | None:
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no settings, or not readable as Pi reads them: its default folder
    value = data.get("sessionDir") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def find_session_files(paths: Iterable[Path]) -> Iterator[tuple[Path, str | None]]:
    """(file, None) for every candidate `*.jsonl` under the given files and folders (folders
    recursively, in name order); (path, reason) for a path that cannot be used at all."""
    for path in paths:
        if path.is_dir():
            found: list[Path] = []
            for root, dirs, files in os.walk(path, onerror=None):
                dirs.sort()
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found.extend(Path(root) / f for f in sorted(files) if f.endswith(".jsonl") and not f.startswith("."))
            for f in found:
                kind = special_kind(f)
                yield f, (f"is {kind}, not a session file; not read" if kind else None)
        elif path.exists():
            kind = special_kind(path)  # a FIFO would block the import, the zero device never end
            yield path, (f"is {kind}, not a session file; not read" if kind else None)
        else:
            yield path, "does not exist"
