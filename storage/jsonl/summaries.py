"""The JSONL catalog's summary cache: one small JSON file beside the sessions.

Listing sessions must not read every session file (a 100k-entry file takes ~0.5 s to summarise).
`.summaries.json` keeps, per file name, the file's identity (inode, size, mtime) and what a
session list shows (stats, name, first message, newest message time). A record is used only while
the file is exactly as it was; otherwise the file is read once and the record replaced. It is a
cache: lost, stale, garbage or unwritable, it only costs time, never correctness.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..base import SessionStats, SessionSummary
from ..session_file import write_atomic

CACHE_NAME = ".summaries.json"
_VERSION = 1


def file_key(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns]


class SummaryCache:
    def __init__(self, directory: Path):
        self.path = directory / CACHE_NAME
        self._records: dict[str, dict[str, Any]] | None = None
        self._dirty = False

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._records is None:
            try:
                data = json.loads(self.path.read_bytes())
                ok = isinstance(data, dict) and data.get("version") == _VERSION and isinstance(data.get("files"), dict)
                self._records = data["files"] if ok else {}
            except (OSError, ValueError, RecursionError):
                self._records = {}
        return self._records

    def get(self, name: str, key: list[int]) -> dict[str, Any] | None:
        record = self._load().get(name)
        if isinstance(record, dict) and record.get("key") == key:
            return record
        return None

    def put(self, name: str, key: list[int], summary: SessionSummary, stats: SessionStats, modified_ms: float | None) -> None:
        record = {"key": key, "summary": asdict(summary), "stats": asdict(stats), "modifiedMs": modified_ms}
        records = self._load()
        if records.get(name) != record:
            records[name] = record
            self._dirty = True

    def forget_missing(self, names: set[str]) -> None:
        records = self._load()
        for name in [n for n in records if n not in names]:
            del records[name]
            self._dirty = True

    def save(self) -> None:
        if not self._dirty or self._records is None:
            return
        self._dirty = False
        data = json.dumps({"version": _VERSION, "files": self._records}, separators=(",", ":")).encode()
        try:
            write_atomic(self.path, data)
        except OSError:
            pass  # a read-only or full disk: the cache is only an optimisation


def summary_from(record: dict[str, Any]) -> tuple[SessionSummary, SessionStats, float | None]:
    """The cached values; ValueError/TypeError/KeyError for a record of the wrong shape."""
    summary = SessionSummary(**record["summary"])
    stats = SessionStats(**record["stats"])
    modified = record.get("modifiedMs")
    if modified is not None and not isinstance(modified, (int, float)):
        raise ValueError("modifiedMs")
    return summary, stats, modified
