"""read, ls and grep: look at the working tree without changing it.

They never open a FIFO, a socket or a device (a read could block forever or never end: issue 15),
run their file work off the event loop so Ctrl+C / Esc stop them at once — read and ls on a thread
(offloop.py), grep in a child process (file_scan.py: a regular expression can backtrack for hours
while holding the GIL) — and give up after WORK_SECONDS with what they have; the loop's `timeout`
is a backstop behind that. With a `FileHost` (host.py: an editor, `treechat acp`) read takes a
file's text from the editor, unsaved changes included; ls and grep always look here.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel, Field

from treechat.llm.abort import AbortSignal

from ..types import JsonObject
from . import file_scan
from .base import AgentTool, OnUpdate, ToolResult, text_result
from .file_scan import SKIP_DIRS, NotRegular, open_regular, special_kind
from .file_write import inspect
from .host import FileHost, HostError, text_bytes
from .offloop import Stop, ToolCancelled, off_loop
from .reach import Reach
from .truncate import MAX_BYTES, MAX_LINES, truncate_head

WORK_SECONDS = 30.0  # a file tool stops here and reports what it found so far
FILE_TOOL_TIMEOUT = 60.0  # the loop's backstop for a tool whose thread is stuck in a read
_CHECK_EVERY = 2048  # lines between stop checks
HOST_READ_MAX = 4 * 1024 * 1024  # a larger file is read here: the editor's answer, JSON-escaped, must fit one message


def _deadline() -> Stop:
    return Stop(time.monotonic() + WORK_SECONDS)


def _stopped_note(stop: Stop) -> str:
    return ("[Stopped: cancelled.]" if stop.why == "cancelled"
            else f"[Stopped after {WORK_SECONDS:g} s; narrow the path or pattern.]")


A = TypeVar("A", bound=BaseModel)


class _CwdTool(AgentTool[A]):
    timeout = FILE_TOOL_TIMEOUT

    def __init__(self, cwd: str | os.PathLike[str] | None = None, reach: Reach | None = None) -> None:
        self.cwd = Path(cwd or os.getcwd())
        self.reach = reach or Reach.of(self.cwd)  # outside the working folder: asked, or refused

    def _path(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.cwd / path

    def timeout_for(self, args: A) -> float | None:
        """No loop timer when the tool will ask first (the time a person takes to answer is not
        the tool's): `_bounded` then bounds the work itself."""
        if self.reach.confirm is not None and not self.reach.is_inside(self._path(getattr(args, "path", "."))):
            return None
        return self.timeout

    async def _allowed(self, path: Path, shown: str) -> ToolResult | None:
        """None when the tool may look at `path`; else the refusal the model gets."""
        refusal = await self.reach.refusal(self.name, path, shown)
        return None if refusal is None else text_result(refusal, is_error=True)


async def _bounded(work: Awaitable[ToolResult], name: str) -> ToolResult:
    try:
        return await asyncio.wait_for(work, FILE_TOOL_TIMEOUT)
    except TimeoutError:
        return text_result(f"Tool {name} timed out after {FILE_TOOL_TIMEOUT:g} s and was stopped.", is_error=True)


class ReadArgs(BaseModel):
    path: str = Field(description="File to read, relative to the working directory or absolute")
    offset: int = Field(1, ge=1, description="First line to show (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines to show")


class ReadTool(_CwdTool[ReadArgs]):
    name, label = "read", "Read"
    description = ("Read a text file. Long files are cut; use offset and limit to page through them. "
                   "Outside the working folder (the repository) the user is asked first.")
    Args = ReadArgs

    def __init__(self, cwd: str | os.PathLike[str] | None = None, reach: Reach | None = None,
                 files: FileHost | None = None) -> None:
        super().__init__(cwd, reach)
        self.files = files  # None: read here

    async def execute(self, tool_call_id: str, args: ReadArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        path = self._path(args.path)
        refused = await self._allowed(path, args.path)
        return refused or await _bounded(self._read(path, args, signal), self.name)

    async def _read(self, path: Path, args: ReadArgs, signal: AbortSignal | None) -> ToolResult:
        stop = _deadline()
        try:
            text = await self._from_host(path, signal) if self.files is not None else None
            if text is not None:
                data = io.BytesIO(text_bytes(text))
                return await off_loop(lambda s: _page(data, args, s, len(data.getbuffer())), signal, stop)
            return await off_loop(lambda s: _read(path, args, s), signal, stop)
        except NotRegular as err:
            return text_result(f"{args.path} is {err.kind}; not read.", is_error=True)
        except FileNotFoundError:
            return text_result(f"No such file: {args.path}", is_error=True)
        except IsADirectoryError:
            return text_result(f"{args.path} is a directory; use ls.", is_error=True)
        except HostError as err:
            return text_result(f"Cannot read {args.path}: {err}", is_error=True)
        except OSError as err:
            return text_result(f"Cannot read {args.path}: {err.strerror or err}", is_error=True)

    async def _from_host(self, path: Path, signal: AbortSignal | None) -> str | None:
        """The file's text as the editor has it; None: read it here (too large to ask for).
        What is at the path is looked at here first: the editor is never asked to open a FIFO."""
        assert self.files is not None
        real = self.reach.real(path)
        target = await off_loop(lambda s: inspect(real), signal)
        if target.kind == "missing":
            raise FileNotFoundError(real)
        if target.kind == "directory":
            raise IsADirectoryError(real)
        if target.kind == "special":
            raise NotRegular(target.special)
        if target.size > HOST_READ_MAX:
            return None
        return await self.files.read_text(real)


def _read(path: Path, args: ReadArgs, stop: Stop) -> ToolResult:
    if path.is_dir():
        raise IsADirectoryError(str(path))
    with os.fdopen(open_regular(path), "rb") as f:
        return _page(f, args, stop, os.fstat(f.fileno()).st_size)


def _page(f: BinaryIO, args: ReadArgs, stop: Stop, size: int) -> ToolResult:
    """The lines of `f` that `args` asks for, cut to what a context takes."""
    head = f.read(8000)
    if b"\0" in head:
        return text_result(f"{args.path} is a binary file ({size} bytes); not shown.", is_error=True)
    f.seek(0)
    first = args.offset
    end = None if args.limit is None else first - 1 + args.limit
    shown: list[str] = []
    used = 0
    full = False  # the shown part reached the output limits
    total = 0
    for total, raw in enumerate(f, 1):
        if total % _CHECK_EVERY == 0 and stop():
            break
        if total < first or full or (end is not None and total > end):
            continue
        line = raw.decode("utf-8", "replace")
        used += len(raw)
        if len(shown) >= MAX_LINES or used > MAX_BYTES:
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


class LsTool(_CwdTool[LsArgs]):
    name, label = "ls", "List"
    description = ("List a directory: one entry per line, directories end with '/'; "
                   "FIFOs, sockets and devices are marked (the file tools do not open them). "
                   "Outside the working folder (the repository) the user is asked first.")
    Args = LsArgs

    async def execute(self, tool_call_id: str, args: LsArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        path = self._path(args.path)
        refused = await self._allowed(path, args.path)
        return refused or await _bounded(self._list(path, args, signal), self.name)

    async def _list(self, path: Path, args: LsArgs, signal: AbortSignal | None) -> ToolResult:
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


class GrepTool(_CwdTool[GrepArgs]):
    name, label = "grep", "Search"
    description = ("Search text files for a regular expression; prints path:line: text for each match. "
                   "FIFOs, sockets, devices and binary files are skipped, and links that lead out of the folder "
                   "searched. Outside the working folder (the repository) the user is asked first.")
    Args = GrepArgs

    def __init__(self, cwd: str | os.PathLike[str] | None = None, reach: Reach | None = None, *,
                 env: dict[str, str] | None = None) -> None:
        super().__init__(cwd, reach)
        self.env = env  # the scan child's environment (None: this process's without its secrets)

    async def execute(self, tool_call_id: str, args: GrepArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        try:
            re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as err:
            return text_result(f"Invalid pattern {args.pattern!r}: {err}", is_error=True)
        root = self._path(args.path)
        problem = await asyncio.to_thread(_unsearchable, root, args.path)  # a stat can hang (a network folder)
        if problem:
            return text_result(problem, is_error=True)
        refused = await self._allowed(root, args.path)
        return refused or await _bounded(self._grep(root, args, signal), self.name)

    async def _grep(self, root: Path, args: GrepArgs, signal: AbortSignal | None) -> ToolResult:
        # links that lead out of the folder searched (the working folder, or the one allowed) are skipped
        within = None if self.reach.anywhere else self.reach.root if self.reach.is_inside(root) else self.reach.real(root)
        params: JsonObject = {"root": str(root), "cwd": str(self.cwd), "pattern": args.pattern, "ignore_case": args.ignore_case,
                  "limit": args.limit, "seconds": WORK_SECONDS, "within": within}
        matches, why, skipped = await _grep_in_child(params, signal, self.env)
        text = truncate_head("\n".join(matches))[0] if matches else "No matches."
        if skipped:
            text += (f"\n[Skipped {skipped} link{'s' if skipped != 1 else ''} that lead outside {within}; read them "
                     "by name to be asked.]")
        if why == "limit":
            return text_result(text + f"\n[Stopped at {args.limit} matches; narrow the pattern or path.]")
        if why == "cancelled":
            raise ToolCancelled("Stopped: the run was cancelled.")
        if why == "time":
            return text_result(text + f"\n[Stopped after {WORK_SECONDS:g} s; narrow the path or pattern.]")
        if why:
            return text_result(f"{text}\n[The search failed: {why}]", is_error=True)
        return text_result(text)


def _unsearchable(root: Path, shown: str) -> str | None:
    """Why `root` cannot be searched (missing, unreadable, a special file), or None."""
    if not os.path.lexists(root):
        return f"No such file or directory: {shown}"
    try:
        kind = None if root.is_dir() else special_kind(os.stat(root).st_mode)
    except OSError as err:
        return f"Cannot search {shown}: {err.strerror}"
    if kind:  # a special file named directly: say so rather than "No matches."
        return f"{shown} is {kind}; not searched."
    return None


async def _grep_in_child(params: JsonObject, signal: AbortSignal | None,
                         env: dict[str, str] | None) -> tuple[list[str], str, int]:
    """Run file_scan.py's grep in a child process (see there for why); kill it on abort, and once
    its deadline has passed by a second (a pattern stuck on one line checks no deadline). Returns
    the matches that arrived and why it ended ("", "limit", "time", "cancelled", or an error)."""
    from treechat.config.tool_env import tool_environment

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", file_scan.__file__, json.dumps(params),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=tool_environment() if env is None else env)
    aborted = asyncio.Event()
    remove = signal.add_listener(aborted.set) if signal else (lambda: None)
    matches: list[str] = []
    why: str | None = None
    skipped = 0

    async def read() -> None:
        nonlocal why, skipped
        assert proc.stdout is not None
        async for raw in proc.stdout:
            item = json.loads(raw)
            if "match" in item:
                matches.append(item["match"])
            else:
                why, skipped = item["done"], int(item.get("skipped", 0))

    reading = asyncio.ensure_future(read())
    stopping = asyncio.ensure_future(aborted.wait())
    try:
        done, _ = await asyncio.wait({reading, stopping}, timeout=WORK_SECONDS + 1.0,
                                     return_when=asyncio.FIRST_COMPLETED)
        if reading not in done:
            why = "cancelled" if stopping in done else "time"
        else:
            reading.result()  # a garbled line from the child raises here
    finally:
        remove()
        for task in (reading, stopping):
            task.cancel()
        if not (reading.done() and not reading.cancelled()):
            # stopped early: kill it. Not after it wrote its last line (it is exiting by itself):
            # Popen.send_signal first polls, which reaps the child behind asyncio's watcher, and
            # that logs "Unknown child process pid N" on stderr
            proc.kill()
        err = (await proc.communicate())[1] if why is None else b""
        await proc.wait()
    if why is None:  # the child died without its last line: say why, in one line
        lines = err.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"the search process ended with status {proc.returncode}"
    return matches, why, skipped


__all__ = ["ReadTool", "LsTool", "GrepTool", "SKIP_DIRS", "WORK_SECONDS", "FILE_TOOL_TIMEOUT"]
