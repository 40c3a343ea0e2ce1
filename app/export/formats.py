"""Writing a session to a file, by the file's extension: `.jsonl` opens in Pi at the same leaf,
`.md` is the active path for reading, `.html` is the whole tree to look at and share (one
self-contained page). The app's `/export`; each format is written by the same code as the CLI's
`export --format …` (the HTML page, the streamed JSONL file, the Markdown of the path)."""

from __future__ import annotations

import sys
from pathlib import Path

from treechat.cli.storage import stream_export
from treechat.export.markdown import render_markdown
from treechat.export.target import write_text_file
from treechat.session.session import Session

FORMATS = ("jsonl", "md", "html")


def format_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else "jsonl"


async def markdown_of(session: Session) -> str:
    ctx = await session.build_session_context()
    title = await session.get_session_name() or f"treechat session {session.session_id}"
    return render_markdown(title, ctx.messages)


async def export_session(session: Session, path: Path, fmt: str | None = None) -> None:
    fmt = fmt or format_of(path)
    if fmt == "html":
        from treechat.export.html import export_html

        await export_html(session.storage, path)
        return
    if fmt == "md":
        await write_text_file(path, await markdown_of(session))
        return
    # the CLI's own export: paged, atomic (or into a device or FIFO), a leaf marker where the last line is not the leaf
    await stream_export(session.storage, str(path), sys.stdout, show_progress=False)
