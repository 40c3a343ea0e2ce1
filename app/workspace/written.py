"""What treechat last wrote to each file on this machine, whichever session wrote it:
`<home>/restores/written.json`.

"A file changed on disk since treechat last wrote it" is a question about this disk, not about
one session: a fork, another session in the same folder or a `-p` run may have written the file
last. Every edit, write, watched command, restore and undo sets the path's entry; a restore
compares the disk with it (or, for a file treechat never wrote here, with the session's own last
checkpoint). Each update reads the file again first, so two processes lose at most a race.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from treechat.agent.tools.file_write import replace_file
from treechat.storage.model import now_iso

KEEP = 20_000  # paths remembered, the most recently written


class WrittenLog:
    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.path = Path(home) / "restores" / "written.json"
        self.paths: dict[str, tuple[str | None, str]] = self._read()

    def _read(self) -> dict[str, tuple[str | None, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        items = data.get("paths") if isinstance(data, dict) else None
        out: dict[str, tuple[str | None, str]] = {}
        for path, item in (items.items() if isinstance(items, dict) else ()):
            if isinstance(path, str) and isinstance(item, dict):
                content = item.get("content")
                out[path] = (content if isinstance(content, str) and content else None, str(item.get("at") or ""))
        return out

    def knows(self, path: str) -> bool:
        return path in self.paths

    def content(self, path: str) -> str | None:
        """What treechat last made of `path` here (None: it removed it); ask `knows` first."""
        return self.paths[path][0]

    def set(self, changes: Iterable[tuple[str, str | None]]) -> None:
        """Record what treechat just wrote (None: removed), and save."""
        self.paths = self._read()  # another process may have written since
        at = now_iso()
        for path, content in changes:
            self.paths.pop(path, None)
            self.paths[path] = (content, at)
        if len(self.paths) > KEEP:
            self.paths = dict(list(self.paths.items())[-KEEP:])
        data = {"v": 1, "paths": {p: {"content": c, "at": a} for p, (c, a) in self.paths.items()}}
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(str(self.path), json.dumps(data, ensure_ascii=False).encode("utf-8"), mode=0o600)
