"""Keep tool output within what a model context can take, and say when we cut."""

from __future__ import annotations

MAX_LINES = 2000
MAX_BYTES = 50_000


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> tuple[str, bool]:
    """The first lines that fit (for files and listings)."""
    lines = text.splitlines(keepends=True)
    out, size = [], 0
    for line in lines[:max_lines]:
        size += len(line.encode("utf-8", "replace"))
        if size > max_bytes:
            break
        out.append(line)
    return "".join(out), len(out) < len(lines)


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> tuple[str, bool]:
    """The last lines that fit (for command output, where the end matters most)."""
    lines = text.splitlines(keepends=True)
    out, size = [], 0
    for line in reversed(lines[-max_lines:]):
        size += len(line.encode("utf-8", "replace"))
        if size > max_bytes:
            break
        out.append(line)
    out.reverse()
    return "".join(out), len(out) < len(lines)
