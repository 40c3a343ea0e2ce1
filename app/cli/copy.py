"""`treechat copy --from sqlite --to postgres`: move history between stores in one command.

Each session is copied whole (every entry, every branch, leaf markers included, its leaf, its
fork origin) in one transaction of the target, keeping its id, so copying again skips what is
there already (idempotent by session id) and says which sessions grew in the source since
(`--force` replaces them). Sessions nothing was written to are not copied.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from treechat.storage.base import EntryCursor, ImportReport, SessionCatalog, SessionStorage, StorageError
from treechat.storage.imports.records import ImportRecords, prepare_records
from treechat.storage.json_types import SessionHeader
from treechat.storage.model_lite import entry_json
from treechat.storage.model_views import view_of_model as view_of_entry  # (copies models: pydantic is loaded)
from treechat.storage.views import EntryView
from treechat.text.sanitize import visible_line

from ..progress import progress

PAGE = 2000  # entries per read


@dataclass
class CopySummary:
    copied: list[str] = field(default_factory=list)
    entries: int = 0
    already: list[str] = field(default_factory=list)
    grown: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def line(self, source: str, target: str) -> str:
        n = len(self.copied)
        parts = [f"copied {n} session{'s' if n != 1 else ''} ({self.entries:,} entries) from {source} to {target}"]
        if self.already:
            parts.append(f"{len(self.already)} already there, skipped (--force replaces them)")
        if self.grown:
            shown = ", ".join(self.grown[:3]) + (f" and {len(self.grown) - 3} more" if len(self.grown) > 3 else "")
            parts.append(f"written to in {source} since they were copied: {shown} (--force copies them again)")
        if self.failed:
            shown = "; ".join(self.failed[:3]) + (f"; and {len(self.failed) - 3} more" if len(self.failed) > 3 else "")
            parts.append(f"{len(self.failed)} failed: {shown}")
        return "; ".join(parts)


async def session_records(storage: SessionStorage) -> tuple[SessionHeader, ImportRecords, ImportReport]:
    """A stored session as what an import takes: its header and every entry, in append order."""
    meta = await storage.get_metadata()
    leaf = await storage.get_leaf_id()
    pairs: list[tuple[str, EntryView]] = []
    after: str | None = None
    while True:
        page = await storage.get_entries(EntryCursor(after_id=after, limit=PAGE))
        if not page:
            break
        pairs.extend((entry_json(e), view_of_entry(e)) for e in page)
        after = page[-1].id
    header: SessionHeader = {"type": "session", "version": 3, "id": meta.id, "timestamp": meta.created_at,
                              "cwd": meta.cwd}
    if meta.parent_session_id:
        header["parentSessionId"] = meta.parent_session_id
    if meta.parent_entry_id:
        header["parentEntryId"] = meta.parent_entry_id
    report = ImportReport()
    return header, prepare_records(pairs, leaf, report), report


async def run_copy(source: SessionCatalog, target: SessionCatalog, refs: list[str], *, force: bool,
                   names: tuple[str, str], stdout: TextIO) -> int:
    """Copy the sessions `refs` names (all, when none) from `source` to `target`; prints the ids
    (stdout) and one summary line (stderr). 1 when some session failed."""
    summary = CopySummary()
    rows = {r.id: r for r in await source.list() if r.entry_count > 0}
    wanted = [(await source.open(ref)).session_id for ref in refs] if refs else list(rows)
    with progress("Copying", total=len(wanted) or None, unit="sessions") as bar:
        for sid in wanted:
            bar.update(description=f"Copying {sid[:8]}")
            try:
                await _copy_one(source, target, sid, force, summary)
            except StorageError as err:
                summary.failed.append(f"{sid}: {err}")
            bar.advance(1)
    for sid in summary.copied + summary.already:
        stdout.write(sid + "\n")
    print(f"treechat: {visible_line(summary.line(*names))}", file=sys.stderr)
    return 1 if summary.failed else 0


async def _copy_one(source: SessionCatalog, target: SessionCatalog, sid: str, force: bool,
                    summary: CopySummary) -> None:
    storage = await source.open(sid)
    if not force and await target.has_session(sid):
        summary.already.append(sid)
        have = (await (await target.open(sid)).get_session_stats()).entry_count
        more = (await storage.get_session_stats()).entry_count - have
        if more > 0:
            summary.grown.append(f"{sid[:8]} has {more:,} more")
        return
    header, records, report = await session_records(storage)
    copied, report = await target.import_records(header, records, report, replace=force)
    summary.copied.append(copied.session_id)
    summary.entries += sum(1 for v in records.views if v.type != "leaf")
