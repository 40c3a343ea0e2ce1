"""What a tracked file is on disk now: absent, a regular file (its bytes and hash), or something a
restore must never touch (a directory, a FIFO, a device, a file too large to keep)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from treechat.agent.tools.file_write import FileProblem, inspect, read_regular

from .blobs import digest, size_text

UNDO_MAX_BYTES = 16 * 1024 * 1024  # a restore keeps what it replaces up to this; larger files are not replaced


@dataclass(frozen=True)
class OnDisk:
    path: str
    content: str | None = None  # hash of the bytes; None: absent (or `other`)
    data: bytes | None = None
    other: str = ""  # why it is neither absent nor a file we may replace

    @property
    def absent(self) -> bool:
        return self.content is None and not self.other


def look(path: str, limit: int = UNDO_MAX_BYTES) -> OnDisk:
    """The file at `path` now (reads at most `limit` bytes of it)."""
    try:
        if os.path.islink(path) and not os.path.exists(path):
            return OnDisk(path, other="a link to nothing")
        target = inspect(path)
        if target.kind == "missing":
            return OnDisk(path)
        if target.kind == "directory":
            return OnDisk(path, other="a directory")
        if target.kind == "special":
            return OnDisk(path, other=target.special)
        if target.size > limit:
            return OnDisk(path, other=f"{size_text(target.size)}, too large to keep for an undo")
        data = read_regular(path, limit)
    except (FileProblem, OSError) as err:
        return OnDisk(path, other=f"unreadable ({getattr(err, 'strerror', None) or err})")
    if len(data) > limit:
        return OnDisk(path, other="grew while it was read")
    return OnDisk(path, digest(data), data)
