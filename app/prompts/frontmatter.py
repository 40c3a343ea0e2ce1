"""YAML front matter of a Markdown file (Agent Skills' SKILL.md, prompt templates), as Pi reads it.

The file starts with `---`; the front matter runs to the next line starting with `---`; the body
is what follows, trimmed. No front matter: an empty mapping and the whole text. Files are read
to MAX_BYTES at most and only when they are regular files (never a FIFO or a device).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 1_000_000


class FrontMatterError(ValueError):
    """The file cannot be used; the text says why, in words that follow its path."""


def read_text(path: Path) -> str:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise FrontMatterError("is not a regular file")
        if info.st_size > MAX_BYTES:
            raise FrontMatterError(f"is over {MAX_BYTES // 1000} KB")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise FrontMatterError(f"cannot be read ({err.strerror or err})") from None
    if len(raw) > MAX_BYTES:
        raise FrontMatterError(f"is over {MAX_BYTES // 1000} KB")
    return raw.decode("utf-8", "replace")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). Raises FrontMatterError for front matter that is not a YAML mapping."""
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if not normalized.startswith("---"):
        return {}, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return {}, normalized
    source, body = normalized[4:end], normalized[end + 4:].strip()
    import yaml  # type: ignore[import-untyped]  # (only when there is front matter to read)

    try:
        parsed = yaml.safe_load(source)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(err, "problem", None) or "is not valid YAML"
        raise FrontMatterError(f"has front matter that is not valid YAML{where}: {problem}") from None
    if parsed is None:
        return {}, body
    if not isinstance(parsed, dict):
        raise FrontMatterError("has front matter that is not a mapping of keys to values")
    return {str(k): v for k, v in parsed.items()}, body


def read_front_matter(path: Path) -> tuple[dict[str, Any], str]:
    return split_front_matter(read_text(path))
