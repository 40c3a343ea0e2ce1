"""Messages that could not be written to the session (a full disk, a read-only or vanished
store) are kept in a recovery file instead of being lost, and the person is told where.

One JSON line per message (the session's own message JSON, with the session id and the reason),
appended to `<home>/recovery/<session id>.jsonl`; when the home cannot take it either (it is
usually the full disk), the system's temporary folder is tried. Files are private (0600).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from treechat.storage.model import dump


def save_unsaved(message: Any, session_id: str, reason: str, folders: Sequence[Path]) -> Path | None:
    """Append `message` to the first recovery file that takes it; its path, or None."""
    line = json.dumps({"sessionId": session_id, "reason": reason, "message": dump(message)}, ensure_ascii=False)
    for folder in [*folders, Path(tempfile.gettempdir()) / "treechat-recovery"]:
        path = folder / f"{session_id}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            continue
        return path
    return None
