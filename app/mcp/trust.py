"""Whether a project's `.mcp.json` servers may start, remembered in state.json per file.

The answer holds for the file's servers as they were when it was given (a digest of them): a
server added or changed later (a commit, a pull) is asked about again.
"""

from __future__ import annotations

import os
from typing import Literal

from treechat.config.state import StateFile

from .config import ProjectServers

TrustAnswer = Literal["trusted", "refused"]
KEY = "mcp_project_trust"


def remembered_trust(home: str | os.PathLike[str], found: ProjectServers) -> TrustAnswer | None:
    entries = StateFile(home).read().get(KEY)
    entry = entries.get(str(found.path)) if isinstance(entries, dict) else None
    if not isinstance(entry, dict) or entry.get("digest") != found.digest:
        return None
    answer = entry.get("answer")
    return answer if answer in ("trusted", "refused") else None


def remember_trust(home: str | os.PathLike[str], found: ProjectServers, answer: TrustAnswer) -> bool:
    state = StateFile(home)
    entries = state.read().get(KEY)
    kept = dict(entries) if isinstance(entries, dict) else {}
    kept[str(found.path)] = {"digest": found.digest, "answer": answer}
    return state.update(**{KEY: kept})
