"""Text piped into `treechat -p`: bounded in bytes, and a wait for it is said (issue 21: a 50 MB
prompt was sent as it came, and `-p -` reading the zero device never ended).

At most `limit` bytes are read; a pipe that brings more is refused with one line naming the
limit and the setting that raises it (`max_input_mb` in config.toml), and nothing is sent. Text
with NUL bytes near its start is binary and refused like a binary attachment. A pipe that stays
silent for NOTE_AFTER seconds gets one line on stderr saying it is still being read."""

from __future__ import annotations

import os
import select
import stat
import sys
import time
from typing import TextIO

NOTE_AFTER = 5.0  # seconds of a silent pipe before we say we are still waiting for it


class PipedInputError(ValueError):
    """The piped text cannot be the prompt; the message is the one line to show."""


def prompt_with_pipe(prompt: str, stdin: TextIO, limit: int) -> str:
    """`-p -` reads the prompt from stdin; text piped in with `-p PROMPT` comes first, then the
    prompt (`git diff | treechat -p "review this"`). A terminal or no stdin is not read. At most
    `limit` bytes are read (config.toml's `max_input_mb`)."""
    if prompt == "-":
        text = read_piped(stdin, limit)
        if not text.strip():
            raise PipedInputError("-p - reads the prompt from stdin, but stdin was empty.")
        return text
    piped = _piped_text(stdin, limit)
    if not prompt.strip() and not piped.strip():
        raise PipedInputError("The prompt is empty: give the text after -p, or pipe it in (echo … | treechat -p).")
    if not prompt.strip():
        return piped  # `echo … | treechat -p`: the piped text is the prompt
    return f"{piped.rstrip()}\n\n{prompt}" if piped.strip() else prompt


def _piped_text(stdin: TextIO, limit: int) -> str:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # closed, or not a real file (tests)
        return ""
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""  # a terminal, /dev/null, a socket: nothing was piped
    return read_piped(stdin, limit)


def read_piped(stdin: TextIO, limit: int, *, err: TextIO | None = None) -> str:
    """All of `stdin` as text (bad UTF-8 bytes as U+FFFD), or PipedInputError past `limit` bytes."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (tests): its text, bounded the same
        text = stdin.read(limit + 1)
        _check(text.encode("utf-8", "surrogatepass"), limit)
        return text
    data = _read_fd(fd, limit, err or sys.stderr, quiet=stdin.isatty())
    _check(data, limit)
    return data.decode("utf-8", "replace")


def _read_fd(fd: int, limit: int, err: TextIO, *, quiet: bool) -> bytes:
    chunks: list[bytes] = []
    size, started, noted = 0, time.monotonic(), quiet
    while size <= limit:
        if not noted:
            left = NOTE_AFTER - (time.monotonic() - started)
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                noted = True
                print(f"treechat: still reading the piped text ({size:,} bytes so far); Ctrl+C stops", file=err,
                      flush=True)
                continue
        chunk = os.read(fd, min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _check(data: bytes, limit: int) -> None:
    if len(data) > limit:
        raise PipedInputError(f"The piped text is over {limit / 1e6:g} MB (max_input_mb in config.toml); nothing "
                              "was sent. Raise max_input_mb, or let the model read the file with the read tool.")
    if b"\x00" in data[:8192]:
        raise PipedInputError("The piped text is binary (it has NUL bytes); nothing was sent. Pipe text, or attach "
                              "an image with -a.")
