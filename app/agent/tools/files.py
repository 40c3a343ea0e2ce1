"""read, ls and grep: look at the working tree without changing it.

They never open a FIFO, a socket or a device (a read could block forever or never end: issue 15),
run their file work off the event loop (offloop.py) so Ctrl+C / Esc stop them at once, and give up
after WORK_SECONDS with what they have; the loop's `timeout` is a backstop behind that.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, Field

from .base import AgentTool, ToolResult, text_result
from .offloop import NotRegular, Stop, off_loop, open_regular, special_kind
from .truncate import MAX_BYTES, MAX_LINES, truncate_head

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
WORK_SECONDS = 30.0  # a file tool stops here and reports what it found so far
FILE_TOOL_TIMEOUT = 60.0  # the loop's backstop for a tool whose thread is stuck in a read
_CHECK_EVERY = 2048  # lines between stop checks


def _deadline() -> Stop:
    return Stop(time.monotonic() + WORK_SECONDS)


def _stopped_note(stop: Stop) -> str:
    return ("[Stopped: cancelled.]" if stop.why == "cancelled"
            else f"[Stopped after {WORK_SECONDS:g} s; narrow the path or pattern.]")


class _CwdTool(AgentTool):
    timeout = FILE_TOOL_TIMEOUT

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
        stop = _deadline()
        try:
            return await off_loop(lambda s: _read(path, args, s), signal, stop)
        except NotRegular as err:
            return text_result(f"{args.path} is {err.kind}; not read.", is_error=True)
        except FileNotFoundError:
            return text_result(f"No such file: {args.path}", is_error=True)
        except IsADirectoryError:
            return text_result(f"{args.path} is a directory; use ls.", is_error=True)
        except OSError as err:
            return text_result(f"Cannot read {args.path}: {err.strerror or err}", is_error=True)


def _read(path: Path, args: Any, stop: Stop) -> ToolResult:
    if path.is_dir():
        raise IsADirectoryError(str(path))
    with os.fdopen(open_regular(path), "rb") as f:
        head = f.read(8000)
        if b"\0" in head:
            size = os.fstat(f.fileno()).st_size
            return text_result(f"{args.path} is a binary file ({size} bytes); not shown.", is_error=True)
        f.seek(0)
        first = args.offset
        end = None if args.limit is None else first - 1 + args.limit
        shown: list[str] = []
        size = 0
        full = False  # the shown part reached the output limits
        total = 0
        for total, raw in enumerate(f, 1):
            if total % _CHECK_EVERY == 0 and stop():
                break
            if total < first or full or (end is not None and total > end):
                continue
            line = raw.decode("utf-8", "replace")
            size += len(raw)
            if len(shown) >= MAX_LINES or size > MAX_BYTES:
                full = True
                continue
            shown.append(line)
    text = "".join(shown)
    last = first - 1 + len(shown)
    if stop.why:
        return text_result(text + f"\n[Showing lines {first}-{last}; the file was not read to its end.] "
                           + _stopped_note(stop))
    if full or (end is not None and end < total):
        text += f"\n[Showing lines {first}-{last} of {total}. Use offset={last + 1} to continue.]"
    return text_result(text or "(empty file)")


class LsArgs(BaseModel):
    path: str = Field(".", description="Directory to list")


class LsTool(_CwdTool):
    name, label = "ls", "List"
    description = ("List a directory: one entry per line, directories end with '/'; "
                   "FIFOs, sockets and devices are marked (the file tools do not open them).")
    Args = LsArgs

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        path = self._path(args.path)
        try:
            names, stop = await off_loop(lambda s: _list(path, s), signal, _deadline())
        except (NotADirectoryError, FileNotFoundError):
            return text_result(f"No such directory: {args.path}", is_error=True)
        except OSError as err:
            return text_result(f"Cannot list {args.path}: {err.strerror or err}", is_error=True)
        shown, cut = truncate_head("\n".join(names))
        if cut:
            shown += f"\n[Listing truncated: {len(names)} entries in total.]"
        if stop.why:
            shown += "\n" + _stopped_note(stop)
        return text_result(shown or "(empty directory)")


def _list(path: Path, stop: Stop) -> tuple[list[str], Stop]:
    names: list[str] = []
    with os.scandir(path) as entries:
        for i, entry in enumerate(entries):
            if i % _CHECK_EVERY == 0 and stop():
                break
            names.append(entry.name + _marker(entry))
    names.sort()
    return names, stop


def _marker(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_dir():
            return "/"
        mode = entry.stat().st_mode  # follows a link: what reading the entry would meet
    except OSError:
        return ""
    kind = special_kind(mode)
    return f" [{kind.split(' ', 1)[1]}]" if kind else ""


class GrepArgs(BaseModel):
    pattern: str = Field(description="Regular expression (Python syntax)")
    path: str = Field(".", description="File or directory to search")
    ignore_case: bool = False
    limit: int = Field(100, ge=1, description="Most matches to return")


class GrepTool(_CwdTool):
    name, label = "grep", "Search"
    description = ("Search text files for a regular expression; prints path:line: text for each match. "
                   "FIFOs, sockets, devices and binary files are skipped.")
    Args = GrepArgs

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as err:
            return text_result(f"Invalid pattern {args.pattern!r}: {err}", is_error=True)
        root = self._path(args.path)
        if not os.path.lexists(root):
            return text_result(f"No such file or directory: {args.path}", is_error=True)
        try:
            matches, stop = await off_loop(lambda s: _grep(root, self.cwd, regex, args.limit, s), signal, _deadline())
        except NotRegular as err:
            return text_result(f"{args.path} is {err.kind}; not searched.", is_error=True)
        text = truncate_head("\n".join(matches))[0] if matches else "No matches."
        if len(matches) >= args.limit:
            return text_result(text + f"\n[Stopped at {args.limit} matches; narrow the pattern or path.]")
        if stop.why:
            return text_result(text + "\n" + _stopped_note(stop), is_error=stop.why == "cancelled")
        return text_result(text)


def _grep(root: Path, cwd: Path, regex: re.Pattern[str], limit: int, stop: Stop) -> tuple[list[str], Stop]:
    matches: list[str] = []
    kind = None if root.is_dir() else special_kind(os.stat(root).st_mode)
    if kind:  # a special file named directly: say so rather than "No matches."
        raise NotRegular(kind)
    for file in _walk(root, stop):
        if stop():
            break
        try:
            fd = open_regular(file)
        except OSError:  # NotRegular, vanished, unreadable: skipped
            continue
        with os.fdopen(fd, "rb") as f:
            if b"\0" in f.read(8000):
                continue
            f.seek(0)
            rel = file.relative_to(cwd) if file.is_relative_to(cwd) else file
            for n, raw in enumerate(f, 1):
                if n % _CHECK_EVERY == 0 and stop():
                    break
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if regex.search(line):
                    matches.append(f"{rel}:{n}: {line[:300]}")
                    if len(matches) >= limit:
                        return matches, stop
    return matches, stop


def _walk(root: Path, stop: Stop) -> Iterator[Path]:
    if not root.is_dir():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        if stop():
            return
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


__all__ = ["ReadTool", "LsTool", "GrepTool", "SKIP_DIRS", "WORK_SECONDS", "FILE_TOOL_TIMEOUT"]
