"""Messages that could not be written to the session (a full disk, a read-only or vanished
store) are kept in a recovery file instead of being lost, and the person is told where.

One JSON line per message (the session's own message JSON, with the session id and the reason),
appended to `<home>/recovery/<session id>.jsonl`; when the home cannot take it either (it is
usually the full disk), a folder of this user's own in the system's temporary folder is tried:
`treechat-recovery-<uid>`, made 0700, and used only while it is a real folder (not a link) owned
by this user that no one else may enter. Files are private (0600), never opened through a link,
and a write that fails part-way leaves no file (or no part of a line) behind.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from treechat.agent.types import AgentMessage
from treechat.storage.model import dump

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # not on Windows, where the temporary folder is per user anyway


def save_unsaved(message: AgentMessage, session_id: str, reason: str, folders: Sequence[Path]) -> Path | None:
    """Append `message` to the first recovery file that takes it; its path, or None."""
    line = json.dumps({"sessionId": session_id, "reason": reason, "message": dump(message)}, ensure_ascii=False)
    data = (line + "\n").encode("utf-8")
    for folder in [*folders, None]:
        if folder is None:  # the last resort, checked before it is used
            folder = private_temp_folder()
            if folder is None:
                break
        else:
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                continue
        path = folder / f"{session_id}.jsonl"
        if _append(path, data):
            return path
    return None


def private_temp_folder() -> Path | None:
    """`<temp>/treechat-recovery-<uid>`, made 0700 if missing; None when what is there could be
    another user's: a link, not a folder, someone else's, or open to the group or others."""
    owner = _uid()
    folder = Path(tempfile.gettempdir()) / f"treechat-recovery-{'user' if owner is None else owner}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):  # a symlink is refused here: lstat does not follow it
        return None
    if owner is not None and (st.st_uid != owner or st.st_mode & 0o077):
        return None
    return folder


def _uid() -> int | None:
    """This user's id (None on Windows, whose temporary folder is each user's own)."""
    return os.getuid() if hasattr(os, "getuid") else None


def _append(path: Path, data: bytes) -> bool:
    """Write `data` at the end of `path` (a new file is 0600); False, leaving the file as it was
    (or not there), when it cannot be written whole."""
    created = True
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:
        created = False
        try:
            # O_NONBLOCK: a named pipe put there refuses at once (ENXIO) instead of waiting for a reader
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except OSError:  # a link (ELOOP), a folder, not ours to write
            return False
    except OSError:
        return False
    try:
        st = os.fstat(fd)
    except OSError:
        _close(fd)
        return False
    owner = _uid()
    if not stat.S_ISREG(st.st_mode) or (owner is not None and st.st_uid != owner):
        _close(fd)  # a device, a pipe, someone else's file: not written to
        return False
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError("nothing written")
            view = view[written:]
        os.fsync(fd)
    except OSError:
        _undo(path, fd, created, st.st_size)
        return False
    _close(fd)
    return True


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _undo(path: Path, fd: int, created: bool, start: int) -> None:
    """After a failed write: a file made for it goes, an existing one is cut back to its old end."""
    try:
        if not created:
            os.ftruncate(fd, start)
    except OSError:
        pass
    _close(fd)
    if created:
        try:
            os.unlink(path)
        except OSError:
            pass
