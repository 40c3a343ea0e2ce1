"""`export_html`: one session, every branch, as one self-contained HTML file.

The entries are read a page at a time in append order and streamed into the file as they are
rendered, so memory stays flat on a 100k-entry session and progress can be reported per page.
Everything the page shows is computed here except the tree layout and the branch on screen, which
the page's script derives from the records (parent ids, sibling order) when a node is chosen.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from treechat.storage.base import EntryCursor, SessionStats, SessionStorage, StorageError
from treechat.storage.gc_policy import paused
from treechat.storage.json_types import JsonObject
from treechat.storage.model import CompactionEntry, now_iso

from ... import __version__
from ...progress import Reporter
from ...session.context import transform_path
from ..target import ExportFile
from .entries import entry_record, line
from .page import document_head, document_tail, json_for_script
from .render import Renderer

if TYPE_CHECKING:
    from typing_extensions import TypeIs

PAGE_SIZE = 2_000  # entries read and rendered per step (one progress tick, one yield to the loop)
_SURROGATE = re.compile(r"[\ud800-\udfff]")

Output = str | os.PathLike[str] | IO[str] | IO[bytes]
_Sink = IO[str] | IO[bytes] | ExportFile


@dataclass(frozen=True)
class HtmlExportResult:
    """What was written: the file (None for a stream), entries exported and UTF-8 bytes."""

    path: Path | None
    entries: int
    bytes: int


async def export_html(storage: SessionStorage, out: Output, *, progress: Reporter | None = None,
                      title: str | None = None) -> HtmlExportResult:
    """Write the whole session (every branch) as a self-contained HTML page.

    `out`: a file path (export_target.py: a failed export leaves no half file and an earlier export
    intact; a device or FIFO is written into), or an open text or binary stream.
    `progress`: advanced by the number of entries rendered (its total is set to the entry count).
    `title`: the page title; default the session's name, else "treechat session <id>".
    """
    if isinstance(out, (str, os.PathLike)):
        return await _export_to_path(storage, Path(out), progress, title)
    write = _stream_writer(out)
    entries, size = await _write_page(storage, write, progress, title)
    return HtmlExportResult(None, entries, size)


async def _export_to_path(storage: SessionStorage, path: Path, progress: Reporter | None,
                          title: str | None) -> HtmlExportResult:
    """A file that cannot be written is an OutputError naming `path`, not its temporary file."""
    async with await ExportFile.open(path) as target:
        entries, size = await _write_page(storage, _stream_writer(target), progress, title)
    return HtmlExportResult(path, entries, size)


def _stream_writer(out: _Sink) -> Callable[[str], int]:
    """A function writing one chunk of the page and returning its size in UTF-8 bytes."""
    def write(chunk: str) -> int:
        if _SURROGATE.search(chunk):  # a lone surrogate cannot be written as UTF-8
            chunk = _SURROGATE.sub("\ufffd", chunk)
        data = chunk.encode("utf-8")
        if _is_text(out):
            out.write(chunk)
        else:
            out.write(data)
        return len(data)

    return write


def _is_text(out: _Sink) -> TypeIs[IO[str]]:
    """A text stream (an ExportFile, a binary file or sys.stdout.buffer is not)."""
    return isinstance(out, io.TextIOBase) or hasattr(out, "encoding")


async def _write_page(storage: SessionStorage, write: Callable[[str], int], progress: Reporter | None,
                      title: str | None) -> tuple[int, int]:
    meta = await storage.get_metadata()
    name = await storage.get_session_name()
    stats = await storage.get_session_stats()
    total = stats.entry_count
    if progress is not None:
        progress.update(total=total, completed=0)
    page_title = line(title or name or f"treechat session {storage.session_id}", 200)
    generator = f"treechat {__version__}"
    session = {
        "id": storage.session_id,
        "name": line(name, 200) if name else None,
        "title": page_title,
        "created": meta.created_at,
        "cwd": line(meta.cwd, 300),
        "parentSession": meta.parent_session_id,
        "leaf": await storage.get_leaf_id(),
        "exported": now_iso(),
        "generator": generator,
        "stats": _stats_json(stats),
    }
    labels = {k: line(v, 200) for k, v in (await storage.get_labels()).items()}
    size = write(document_head(page_title, generator))
    prefix = json_for_script({"v": 1, "session": session, "labels": labels})
    size += write(prefix[:-1] + ',"entries":[')  # the object stays open for the streamed entries
    renderer = Renderer()
    count, after = 0, None
    while True:
        page = await storage.get_entries(EntryCursor(after_id=after, limit=PAGE_SIZE))
        if not page:
            break
        kept = {e.id: await _kept_ids(storage, e) for e in page if isinstance(e, CompactionEntry)}
        # Rendering makes many short-lived objects and no cycles: the cyclic GC would spend a
        # third of the export rescanning them (measured: 8.8 s → 6.6 s at 100k entries).
        with paused():
            chunk = ",".join(json_for_script(entry_record(e, renderer, kept.get(e.id))) for e in page)
        size += write(("," if count else "") + chunk)
        count += len(page)
        after = page[-1].id
        if progress is not None:
            if count > total:  # the stats leave out `leaf` markers; the entries include them
                total = count
                progress.update(total=total)
            progress.advance(len(page))
        await asyncio.sleep(0)  # rendering a page takes ~50 ms: let the app's loop breathe
    size += write("]}")
    size += write(document_tail())
    return count, size


async def _kept_ids(storage: SessionStorage, compaction: CompactionEntry) -> list[str]:
    """The entries a compaction kept in the context beside its summary: transform_path's rule on
    the path that ends at the compaction (its result is [compaction, kept...])."""
    try:
        path = await storage.get_path_to_root(compaction.id)
    except StorageError:  # a broken parent chain: no kept range to show
        return []
    return [e.id for e in transform_path(path)[1:]]


def _stats_json(stats: SessionStats) -> JsonObject:
    return {
        "entries": stats.entry_count,
        "messages": stats.message_count,
        "userMessages": stats.user_messages,
        "assistantMessages": stats.assistant_messages,
        "toolResults": stats.tool_results,
        "input": stats.input_tokens,
        "output": stats.output_tokens,
        "cacheRead": stats.cache_read_tokens,
        "cacheWrite": stats.cache_write_tokens,
        "totalTokens": stats.total_tokens,
        "cost": round(stats.cost_total, 6),
    }
