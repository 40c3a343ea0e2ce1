"""Writing a session to a file, by the file's extension: `.jsonl` opens in Pi at the same leaf,
`.md` is the active path for reading, `.html` is the whole tree to look at and share (one
self-contained page). One place for the CLI's `export` and the app's `/export`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treechat.export_md import render_markdown
from treechat.session.session import Session
from treechat.storage.jsonl import write_session_file
from treechat.storage.model import SessionMetadata

FORMATS = ("jsonl", "md", "html")


def format_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else "jsonl"


def pi_header(meta: SessionMetadata) -> dict[str, Any]:
    """The header line of a Pi v3 session file for this session."""
    return {"type": "session", "version": 3, "id": meta.id, "timestamp": meta.created_at, "cwd": meta.cwd}


async def markdown_of(session: Session) -> str:
    ctx = await session.build_session_context()
    title = await session.get_session_name() or f"treechat session {session.session_id}"
    return render_markdown(title, ctx.messages)


async def export_session(session: Session, path: Path, fmt: str | None = None) -> None:
    fmt = fmt or format_of(path)
    if fmt == "html":
        from treechat.html_export import export_html

        await export_html(session.storage, path)
        return
    if fmt == "md":
        path.write_text(await markdown_of(session), encoding="utf-8")
        return
    storage = session.storage
    meta = await storage.get_metadata()
    write_session_file(path, pi_header(meta), await storage.get_entries(), session.leaf_id)
