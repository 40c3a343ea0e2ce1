"""Project instructions the agent reads before anything else: `AGENTS.md` (the convention Pi,
Codex and others share), or `CLAUDE.md` in a folder that has no `AGENTS.md`.

Looked for in the global config folder (next to config.toml) and in every folder from the
repository root (the nearest folder above the working folder holding `.git`; the filesystem root
when there is none) down to the working folder, outermost first, so the nearest, most specific
instructions come last and win. A file that is missing or unreadable is skipped; a huge one is cut
with a note saying so, so one stray file cannot fill a small model's whole window.

A file outside the working folder (a link that leads out of the repository, a folder above it
when there is no repository) is read only when the person allowed it (outside.py); the global
folder's file is theirs and is read as it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .outside import ReadsOutside, repository_root

__all__ = ["CONTEXT_FILE_NAMES", "ContextFile", "find_context_files", "read_context_file", "repository_root",
           "search_folders"]

CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")  # the first one present in a folder is used
MAX_CONTEXT_FILE_CHARS = 20_000  # ~5k tokens: room for real instructions, not for a data dump


@dataclass(frozen=True)
class ContextFile:
    path: Path
    text: str
    size: int  # bytes on disk
    truncated: bool = False


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


def read_context_file(path: Path, limit: int = MAX_CONTEXT_FILE_CHARS, *, real: Path | None = None) -> ContextFile | None:
    """The file's text (cut at `limit` characters with a note), or None when it cannot be read.
    `real`: where it really is (what was checked is what is read); it is shown as `path`."""
    source = real or path
    try:
        if not source.is_file():
            return None
        with source.open("rb") as handle:
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
                       limit: int = MAX_CONTEXT_FILE_CHARS, *, outside: ReadsOutside | None = None) -> list[ContextFile]:
    """Every context file that applies to `cwd`, outermost (global) first; never raises. One
    whose real path is outside the working folder is left out unless `outside` allows it (it is
    then pending there; None: nothing outside is read)."""
    try:
        folders = search_folders(Path(cwd), Path(global_dir) if global_dir is not None else None)
        bound = outside or ReadsOutside.for_cwd(cwd)
    except (OSError, RuntimeError):
        return []
    own = Path(global_dir).expanduser() if global_dir is not None else None
    found = []
    for folder in folders:
        for name in CONTEXT_FILE_NAMES:
            path = folder / name
            if not os.path.exists(path):
                continue
            real = _real(path)
            if folder != own and not bound.allows(name, path, str(real)):
                break  # not read (pending or refused); the other name is no stand-in for it
            loaded = read_context_file(path, limit, real=real)
            if loaded is not None:
                found.append(loaded)
            break  # present: used, or unreadable (then not the other name either)
    return found
