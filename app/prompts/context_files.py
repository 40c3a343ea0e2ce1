"""Project instructions the agent reads before anything else: `AGENTS.md` (the convention Pi,
Codex and others share), or `CLAUDE.md` in a folder that has no `AGENTS.md`.

Looked for in the global config folder (next to config.toml) and in every folder from the
repository root (the nearest folder above the working folder holding `.git`; the filesystem root
when there is none) down to the working folder, outermost first, so the nearest, most specific
instructions come last and win. A file that is missing or unreadable is skipped; a huge one is cut
with a note saying so, so one stray file cannot fill a small model's whole window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")  # the first one present in a folder is used
MAX_CONTEXT_FILE_CHARS = 20_000  # ~5k tokens: room for real instructions, not for a data dump


@dataclass(frozen=True)
class ContextFile:
    path: Path
    text: str
    size: int  # bytes on disk
    truncated: bool = False


def repository_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds `.git` (a folder, or a file in worktrees)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def search_folders(cwd: Path, global_dir: Path | None = None) -> list[Path]:
    """Where context files are looked for, in the order they are read."""
    cwd = cwd.resolve()
    root = repository_root(cwd)
    chain = [cwd]
    for folder in cwd.parents:
        if root is not None and folder == root.parent:
            break
        chain.append(folder)
    folders = list(reversed(chain))
    if global_dir is not None:
        folders.insert(0, global_dir.expanduser())
    seen: set[Path] = set()
    unique = []
    for folder in folders:
        key = _real(folder)
        if key not in seen:
            seen.add(key)
            unique.append(folder)
    return unique


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def read_context_file(path: Path, limit: int = MAX_CONTEXT_FILE_CHARS) -> ContextFile | None:
    """The file's text (cut at `limit` characters with a note), or None when it cannot be read."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(limit * 4 + 4)  # enough bytes for `limit` characters of any UTF-8
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return None
    if b"\x00" in raw[:8192]:
        return None  # a binary file that happens to have the name is not instructions
    text = raw.decode("utf-8", errors="replace")
    cut = len(text) > limit or size > len(raw)
    if cut:
        text = text[:limit].rstrip() + (
            f"\n\n[… {path.name} is {size:,} bytes; only its first {limit:,} characters are included here.]"
        )
    return ContextFile(path=path, text=text, size=size, truncated=cut)


def find_context_files(cwd: str | os.PathLike[str], global_dir: str | os.PathLike[str] | None = None,
                       limit: int = MAX_CONTEXT_FILE_CHARS) -> list[ContextFile]:
    """Every context file that applies to `cwd`, outermost (global) first; never raises."""
    try:
        folders = search_folders(Path(cwd), Path(global_dir) if global_dir is not None else None)
    except (OSError, RuntimeError):
        return []
    found = []
    for folder in folders:
        for name in CONTEXT_FILE_NAMES:
            loaded = read_context_file(folder / name, limit)
            if loaded is not None:
                found.append(loaded)
                break
            if (folder / name).exists():
                break  # present but unreadable: do not fall back to the other name
    return found
