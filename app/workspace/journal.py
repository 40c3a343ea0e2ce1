"""What a session's restores replaced on this machine: `<home>/restores/<session id>.json`, so a
restore can be undone (`treechat restore SESSION --undo`, `/restore --undo`), and what treechat
last wrote to each file here (`written.WrittenLog`, shared by every session).

It is local on purpose: it is about this disk, not the conversation (a session in PostgreSQL is
opened from several machines; each has its own files).

    {"v": 1, "undo": [{"at": "…", "to": "<entry id>" | null, "files": [{"path", "replaced", "wrote"}],
                       "blobs": {"<sha256>": "<zlib, base64>"}}]}

A damaged journal reads as empty (nothing is lost but the undo).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from treechat.bounded_json import RawJson
from treechat.export.whole_file import write_private
from treechat.storage.model import now_iso

from .blobs import pack, unpack
from .disk import UNDO_MAX_BYTES
from .history import FileHistory
from .written import WrittenLog

UNDO_KEPT = 20  # restores that can be undone, newest first


@dataclass
class UndoFile:
    path: str
    replaced: str | None  # what was there before the restore (None: nothing)
    wrote: str | None  # what the restore put there (None: it removed the file)


@dataclass
class UndoRecord:
    at: str
    to: str | None
    files: list[UndoFile]
    blobs: dict[str, str] = field(default_factory=dict)

    def content(self, name: str) -> bytes | None:
        packed = self.blobs.get(name)
        return unpack(packed, name, UNDO_MAX_BYTES) if packed is not None else None


class Journal:
    def __init__(self, home: str | os.PathLike[str], session_id: str) -> None:
        safe = "".join(c for c in session_id if c.isalnum() or c in "-_") or "session"
        self.path = Path(home) / "restores" / f"{safe}.json"
        self.written = WrittenLog(home)
        self.undo: list[UndoRecord] = []
        self._wrote: list[tuple[str, str | None]] = []  # written since the last save
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("v") != 1:
            return
        undo = data.get("undo")
        for raw in undo if isinstance(undo, list) else []:
            record = _record(raw)
            if record is not None:
                self.undo.append(record)

    def save(self) -> None:
        data = {"v": 1, "undo": [{"at": r.at, "to": r.to, "files": [vars(f) for f in r.files], "blobs": r.blobs}
                                 for r in self.undo[-UNDO_KEPT:]]}
        write_private(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        if self._wrote:
            wrote, self._wrote = self._wrote, []
            self.written.set(wrote)

    def accepts(self, path: str, content: str | None, history: FileHistory) -> bool:
        """`content` is what treechat last made of `path` on this machine (any session's write,
        restore or undo, either side of one it never finished); for a file it never wrote here,
        the session's last checkpoint of it, or what a worktree's run found there when it began."""
        if self.written.knows(path):
            return self.written.accepts(path, content)
        return content in history.unwritten_states(path)

    def intend(self, changes: list[tuple[str, str | None, str | None]]) -> None:
        """Before a restore or undo writes: each (path, content now, content about to be written)."""
        self.written.intend(changes)

    def wrote(self, path: str, content: str | None) -> None:
        """A restore or undo put `content` at `path` (recorded at the next `save`)."""
        self._wrote.append((path, content))

    def push(self, to: str | None, files: list[UndoFile], replaced: dict[str, bytes]) -> UndoRecord:
        record = UndoRecord(now_iso(), to, files, {name: pack(data) for name, data in replaced.items()})
        self.undo.append(record)
        del self.undo[:-UNDO_KEPT]
        return record


def _str(value: RawJson) -> str | None:
    return value if isinstance(value, str) and value else None


def _record(raw: RawJson) -> UndoRecord | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("files"), list):
        return None
    files = [UndoFile(f["path"], _str(f.get("replaced")), _str(f.get("wrote")))
             for f in raw["files"] if isinstance(f, dict) and isinstance(f.get("path"), str)]
    blobs = raw.get("blobs")
    blobs = blobs if isinstance(blobs, dict) else {}
    return UndoRecord(str(raw.get("at") or ""), _str(raw.get("to")), files,
                      {k: v for k, v in blobs.items() if isinstance(k, str) and isinstance(v, str)})
