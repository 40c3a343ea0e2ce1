"""What treechat last wrote to each file on this machine, whichever session wrote it:
`<home>/restores/written.json`.

"A file changed on disk since treechat last wrote it" is a question about this disk, not about
one session: a fork, another session in the same folder or a `-p` run may have written the file
last. Every edit, write, watched command, restore and undo sets the path's entry; a restore
compares the disk with it (or, for a file treechat never wrote here, with the session's own last
checkpoint). Each update reads the file again first, so two processes lose at most a race.

A write says what it is about to write first (`intend`): until it is done (`set`) either side
is what treechat last wrote, so a process killed between the two (kill -9, a power cut) leaves no
file falsely "changed on disk".

    {"v": 1, "paths": {"/abs/notes.txt": {"content": "<sha256>" | null, "at": "…",
                                          "writing": ["<sha256>" | null, …]}}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from treechat.export.whole_file import write_private
from treechat.storage.model import now_iso

KEEP = 20_000  # paths remembered, the most recently written
PENDING_KEPT = 8  # contents kept of writes that never said they were done


@dataclass(frozen=True)
class Written:
    contents: tuple[str | None, ...]  # what treechat last made of the file (None: removed); more while writing
    at: str


class WrittenLog:
    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.path = Path(home) / "restores" / "written.json"
        self.paths: dict[str, Written] = self._read()

    def _read(self) -> dict[str, Written]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        items = data.get("paths") if isinstance(data, dict) else None
        out: dict[str, Written] = {}
        for path, item in (items.items() if isinstance(items, dict) else ()):
            if isinstance(path, str) and isinstance(item, dict):
                writing = item.get("writing")
                more = tuple(_hash(c) for c in writing[:PENDING_KEPT]) if isinstance(writing, list) else ()
                out[path] = Written((_hash(item.get("content")), *more), str(item.get("at") or ""))
        return out

    def knows(self, path: str) -> bool:
        return path in self.paths

    def content(self, path: str) -> str | None:
        """What treechat last made of `path` here (None: it removed it); ask `knows` first."""
        return self.paths[path].contents[0]

    def accepts(self, path: str, content: str | None) -> bool:
        """`content` is what treechat last made of `path`, or what a write it never finished was
        making; ask `knows` first."""
        return content in self.paths[path].contents

    def unfinished(self) -> list[str]:
        """The paths a write said it was about to make and never said it had (killed meanwhile)."""
        return [path for path, w in self.paths.items() if len(w.contents) > 1]

    def intend(self, changes: Iterable[tuple[str, str | None, str | None]]) -> None:
        """Before writing: each (path, content now, content about to be written); save."""
        self.paths = self._read()
        at = now_iso()
        for path, now, after in changes:
            was = self.paths.pop(path, None)
            contents = was.contents if was is not None else (now,)
            self.paths[path] = Written((*contents[: PENDING_KEPT - 1], after), at)
        self._save()

    def set(self, changes: Iterable[tuple[str, str | None]]) -> None:
        """Record what treechat just wrote (None: removed), and save."""
        self.paths = self._read()  # another process may have written since
        at = now_iso()
        for path, content in changes:
            self.paths.pop(path, None)
            self.paths[path] = Written((content,), at)
        self._save()

    def _save(self) -> None:
        if len(self.paths) > KEEP:
            self.paths = dict(list(self.paths.items())[-KEEP:])
        data = {"v": 1, "paths": {p: _item(w) for p, w in self.paths.items()}}
        write_private(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"))


def _hash(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _item(w: Written) -> dict[str, object]:
    item: dict[str, object] = {"content": w.contents[0], "at": w.at}
    if len(w.contents) > 1:
        item["writing"] = list(w.contents[1:])
    return item
