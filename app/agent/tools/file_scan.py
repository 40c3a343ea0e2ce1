"""File access for the tools that only the standard library needs: special files, and the grep scan.

The grep scan runs in a child process (`python -I -S file_scan.py PARAMS`), so this module imports
nothing but the standard library and has no relative imports. Why a process: a regular expression
can take exponential time on one line (`(a+)+$` against forty "a"s and a "b"), and Python's `re`
holds the GIL while it matches — on a thread it would freeze the whole app, Ctrl+C and Esc
included. A process is killed at once, whatever it is doing.

The child writes one JSON object per line: {"match": "path:line: text"} for each match, then
{"done": WHY} (WHY "" when the whole tree was searched, "time" at its deadline, "limit").
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

SPECIAL_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
                 stat.S_IFBLK: "a block device"}
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
_CHECK_EVERY = 2048  # lines between deadline checks
_LINE_SHOWN = 300  # characters of a matching line in the result


class NotRegular(OSError):
    """The path is a FIFO, socket or device: opening or reading it could block forever."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def special_kind(mode: int) -> str | None:
    """"a FIFO" / "a socket" / "a … device" for such a mode, else None."""
    return SPECIAL_KINDS.get(stat.S_IFMT(mode))


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor for a regular file; raises NotRegular for anything else.

    Checked before opening (a FIFO's open blocks until a writer comes) and again on the
    descriptor (the path may have been swapped in between); O_NONBLOCK keeps that open from
    blocking, and has no effect on regular files."""
    kind = special_kind(os.stat(path).st_mode)
    if kind:
        raise NotRegular(kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(special_kind(mode) or "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def walk(root: Path, stop: Callable[[], bool]) -> Iterator[Path]:
    """Files under `root` in name order, skipping SKIP_DIRS (or `root` itself if it is a file)."""
    if not root.is_dir():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        if stop():
            return
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


def grep(root: Path, cwd: Path, regex: re.Pattern[str], limit: int, stop: Callable[[], bool],
         found: Callable[[str], None], within: str | None = None, skipped: list[int] | None = None) -> str:
    """Call `found` for each matching line of the text files under `root`; returns why it ended
    early ("limit", "time") or "". Special, unreadable and binary files are skipped, and so are
    files whose real path is not under `within` (a link leading out: counted in `skipped`)."""
    count = 0
    prefix = None if within is None else within.rstrip(os.sep) + os.sep
    for file in walk(root, stop):
        if stop():
            return "time"
        real = os.path.realpath(file) if prefix is not None else ""
        if prefix is not None and real != within and not real.startswith(prefix):
            if skipped is not None:
                skipped[0] += 1
            continue
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
                    return "time"
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if regex.search(line):
                    found(f"{rel}:{n}: {line[:_LINE_SHOWN]}")
                    count += 1
                    if count >= limit:
                        return "limit"
    return "time" if stop() else ""  # the walk ends early at the deadline too


def main(argv: list[str]) -> int:
    """The child: PARAMS is {"root", "cwd", "pattern", "ignore_case", "limit", "seconds", "within"}."""
    params = json.loads(argv[1])
    deadline = time.monotonic() + float(params["seconds"])
    regex = re.compile(params["pattern"], re.IGNORECASE if params["ignore_case"] else 0)
    out = sys.stdout

    def found(line: str) -> None:
        out.write(json.dumps({"match": line}) + "\n")
        out.flush()  # the parent keeps what arrived if it has to kill us mid-match

    skipped = [0]
    why = grep(Path(params["root"]), Path(params["cwd"]), regex, int(params["limit"]),
               lambda: time.monotonic() >= deadline, found, params.get("within"), skipped)
    out.write(json.dumps({"done": why, "skipped": skipped[0]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
