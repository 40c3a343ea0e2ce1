"""Drafts: what was typed or queued but not sent, kept per session until it is opened again.

Quitting, switching sessions or forking never loses text: the composer's text and any messages
still queued for a reply that was stopped are written to `<home>/drafts/<session id>.txt`
(private to the user) and come back into the composer the next time the session is opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class Drafts:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.txt"

    def save(self, session_id: str, parts: Iterable[str]) -> None:
        text = "\n\n".join(p.strip() for p in parts if p and p.strip())
        if not text:
            return
        path = self.path(session_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError:  # a read-only or full home: the draft cannot be kept, quitting still works
            pass

    def take(self, session_id: str) -> str | None:
        path = self.path(session_id)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        try:
            path.unlink()
        except OSError:
            pass
        return text or None
