"""read, ls and grep: look at the working tree without changing it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .base import AgentTool, ToolResult, text_result
from .truncate import truncate_head

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}


class _CwdTool(AgentTool):
    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.cwd = Path(cwd or os.getcwd())

    def _path(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.cwd / path


class ReadArgs(BaseModel):
    path: str = Field(description="File to read, relative to the working directory or absolute")
    offset: int = Field(1, ge=1, description="First line to show (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines to show")


class ReadTool(_CwdTool):
    name, label = "read", "Read"
    description = "Read a text file. Long files are cut; use offset and limit to page through them."
    Args = ReadArgs

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        path = self._path(args.path)
        if not path.is_file():
            return text_result(f"No such file: {args.path}", is_error=True)
        data = path.read_bytes()
        if b"\0" in data[:8000]:
            return text_result(f"{args.path} is a binary file ({len(data)} bytes); not shown.", is_error=True)
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        end = len(lines) if args.limit is None else args.offset - 1 + args.limit
        chosen = "".join(lines[args.offset - 1 : end])
        shown, cut = truncate_head(chosen)
        last = args.offset - 1 + len(shown.splitlines())
        if cut or end < len(lines):
            shown += f"\n[Showing lines {args.offset}-{last} of {len(lines)}. Use offset={last + 1} to continue.]"
        return text_result(shown or "(empty file)")


class LsArgs(BaseModel):
    path: str = Field(".", description="Directory to list")


class LsTool(_CwdTool):
    name, label = "ls", "List"
    description = "List a directory: one entry per line, directories end with '/'."
    Args = LsArgs

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        path = self._path(args.path)
        if not path.is_dir():
            return text_result(f"No such directory: {args.path}", is_error=True)
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
        shown, cut = truncate_head("\n".join(names))
        if cut:
            shown += f"\n[Listing truncated: {len(names)} entries in total.]"
        return text_result(shown or "(empty directory)")


class GrepArgs(BaseModel):
    pattern: str = Field(description="Regular expression (Python syntax)")
    path: str = Field(".", description="File or directory to search")
    ignore_case: bool = False
    limit: int = Field(100, ge=1, description="Most matches to return")


class GrepTool(_CwdTool):
    name, label = "grep", "Search"
    description = "Search text files for a regular expression; prints path:line: text for each match."
    Args = GrepArgs

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as err:
            return text_result(f"Invalid pattern {args.pattern!r}: {err}", is_error=True)
        root = self._path(args.path)
        if not root.exists():
            return text_result(f"No such file or directory: {args.path}", is_error=True)
        matches: list[str] = []
        for file in _walk(root):
            if signal is not None and signal.aborted:
                break
            try:
                data = file.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8000]:
                continue
            rel = file.relative_to(self.cwd) if file.is_relative_to(self.cwd) else file
            for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    matches.append(f"{rel}:{n}: {line[:300]}")
                    if len(matches) >= args.limit:
                        text, _ = truncate_head("\n".join(matches))
                        return text_result(text + f"\n[Stopped at {args.limit} matches; narrow the pattern or path.]")
        return text_result(truncate_head("\n".join(matches))[0] if matches else "No matches.")


def _walk(root: Path):
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name
