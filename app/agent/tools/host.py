"""Where the tools' files and commands live: this machine (the default, no host), or an editor
that serves them (`treechat acp`: the editor's buffers, unsaved changes included, and its
terminal, which the person watches).

A host answers for the content only: what is at a path (a FIFO, a device, a folder, a file too
large) is still looked at here first, so a tool never asks an editor to open what it would not
open itself, and what the model is told reads the same whichever host served it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from treechat.llm.abort import AbortSignal

__all__ = ["HostError", "FileHost", "CommandHost", "CommandRun", "text_bytes", "bytes_text"]


class HostError(Exception):
    """The host could not do it; the text is one sentence (the editor's own reason)."""


class FileHost(Protocol):
    async def read_text(self, path: str) -> str:
        """The whole text at `path` (absolute, links followed) as the editor has it. Raises HostError."""
        ...

    async def write_text(self, path: str, text: str) -> None:
        """Replace the text at `path` (absolute; its folder exists). Raises HostError."""
        ...


@dataclass(frozen=True)
class CommandRun:
    """What a command did: its output (the tail that was kept), how it ended."""

    output: str
    exit_code: int | None  # None: killed (timed out, cancelled) or ended by a signal
    timed_out: bool = False
    truncated: bool = False  # only the tail of the output was kept
    held_open: bool = False  # a background process kept the output open after the shell exited
    signal: str | None = None  # the signal that ended it, when the host says


class CommandHost(Protocol):
    async def run(self, tool_call_id: str, command: str, cwd: str, limit: float, keep: int,
                  signal: AbortSignal | None) -> CommandRun:
        """Run `command` through a shell in `cwd`; kill it after `limit` seconds or when `signal`
        aborts (then return what it printed). `keep`: the bytes of output worth keeping (the tail).
        Raises HostError when it could not be started."""
        ...


def text_bytes(text: str) -> bytes:
    """A host's text as the file's bytes: UTF-8, with bytes that were not UTF-8 (`bytes_text`'s
    escapes) given back as they were; half a UTF-16 pair stays (and the file reads as binary)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def bytes_text(data: bytes) -> str:
    """A file's bytes as a host's text; `text_bytes` gives the same bytes back."""
    return data.decode("utf-8", "surrogateescape")
