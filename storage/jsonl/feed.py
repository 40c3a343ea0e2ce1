"""What other processes write to a JSONL folder, within a second: the files' sizes and times.

Every POLL_S one scandir of the sessions folder compares each `*.jsonl` file's size and mtime
with the last look; a file that changed, appeared or went away names its session (the id is
the part of the name after the first `_`, as Pi names files). This process's own appends are
reported too: `poll_appended` tells them apart.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from ..base import StoreChange

POLL_S = 0.5


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    try:
        with os.scandir(folder) as found:
            for item in found:
                if item.name.endswith(".jsonl") and "_" in item.name and not item.name.startswith("."):
                    try:
                        st = item.stat()
                    except OSError:
                        continue
                    out[item.name] = (st.st_size, st.st_mtime_ns)
    except OSError:
        pass  # no folder yet, or unreadable: nothing to compare
    return out


def _session_id(name: str) -> str:
    return name[: -len(".jsonl")].split("_", 1)[1]


class JsonlChangeFeed:
    def __init__(self, folder: Path, poll_s: float = POLL_S) -> None:
        self.folder, self.poll_s = folder, poll_s
        self._seen: dict[str, tuple[int, int]] | None = None
        self.closed = False

    async def next_change(self, timeout: float) -> StoreChange | None:  # noqa: ASYNC109  a poll in steps: None when it passes (a cancel could cut a read of the store)
        deadline = time.monotonic() + max(timeout, 0.0)
        if self._seen is None:
            self._seen = _snapshot(self.folder)
            return StoreChange(None)  # the first look: catch up with whatever came before it
        while not self.closed:
            now = _snapshot(self.folder)
            changed = {_session_id(n) for n in now.keys() | self._seen.keys() if now.get(n) != self._seen.get(n)}
            self._seen = now
            if changed:
                return StoreChange(frozenset(changed))
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            await asyncio.sleep(min(self.poll_s, left))
        return None

    async def close(self) -> None:
        self.closed = True
