"""The editor's files and terminal, for the tools (`treechat.agent.tools.host`), when the client
offers them (`fs.readTextFile`, `fs.writeTextFile`, `terminal` in its capabilities).

- `EditorFiles`: read gets a file's text as the editor has it (an unsaved buffer included), edit
  and write read and write through it, so a change lands in the open buffer;
- `EditorTerminal`: bash's command runs in a terminal the editor makes (`sh -c COMMAND` in the
  working directory), shown live in the tool call; killed at the command's time limit or when the
  run is stopped, its output then read, and the terminal released whatever happened.

Every request is bounded in time (a client that never answers is an error, not a hang).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from acp import RequestError
from acp.interfaces import Client
from acp.schema import ToolCallProgress
from pydantic import ValidationError

from treechat.agent.tools.host import CommandRun, HostError, bytes_text, text_bytes
from treechat.llm.abort import AbortSignal

from .calls import terminal_content

ANSWER_SECONDS = 30.0  # a file read or write, a terminal's creation, output, kill or release
SHELL = "/bin/sh"  # as the bash tool runs a command here (asyncio's create_subprocess_shell)

T = TypeVar("T")


async def _asked(what: str, request: Awaitable[T]) -> T:
    """The client's answer to `request`, or HostError saying why there was none."""
    try:
        return await asyncio.wait_for(request, ANSWER_SECONDS)
    except TimeoutError:
        raise HostError(f"the editor did not answer {what} within {ANSWER_SECONDS:g} s") from None
    except RequestError as err:
        raise HostError(f"the editor refused {what}: {_reason(err)}") from None
    except ValidationError:
        raise HostError(f"the editor's answer to {what} was not what ACP says") from None
    except ConnectionError:
        raise HostError("the editor is gone") from None


def _reason(err: RequestError) -> str:
    data = err.data
    detail = data.get("details") or data.get("message") if isinstance(data, dict) else data
    text = str(err) + (f" ({detail})" if isinstance(detail, str) and detail else "")
    return " ".join(text.split())[:300]


class EditorFiles:
    """A `FileHost` over the client's `fs/read_text_file` and `fs/write_text_file` (either may be
    missing: that side is then this machine's)."""

    def __init__(self, client: Client, session_id: str, *, read: bool, write: bool) -> None:
        self.client, self.session_id = client, session_id
        self.reads, self.writes = read, write

    async def read_text(self, path: str) -> str:
        if not self.reads:
            return await asyncio.to_thread(_read_here, path)
        answer = await _asked(f"reading {path}", self.client.read_text_file(session_id=self.session_id, path=path))
        return answer.content

    async def write_text(self, path: str, text: str) -> None:
        if not self.writes:
            await asyncio.to_thread(_write_here, path, text)
            return
        await _asked(f"writing {path}", self.client.write_text_file(session_id=self.session_id, path=path,
                                                                    content=text))


def _read_here(path: str) -> str:
    from treechat.agent.tools.edit import MAX_EDIT_BYTES
    from treechat.agent.tools.file_write import read_regular

    try:
        return bytes_text(read_regular(path, MAX_EDIT_BYTES))
    except OSError as err:
        raise HostError(err.strerror or str(err)) from None


def _write_here(path: str, text: str) -> None:
    from treechat.agent.tools.file_write import replace_file

    try:
        replace_file(path, text_bytes(text))
    except OSError as err:
        raise HostError(err.strerror or str(err)) from None


class EditorTerminal:
    """A `CommandHost` over the client's `terminal/*` methods. `show(tool_call_id, update)` puts
    the terminal into the tool call as it starts, so the person watches it run."""

    def __init__(self, client: Client, session_id: str, show: Callable[[ToolCallProgress], Awaitable[None]],
                 on_terminal: Callable[[str, str], None] = lambda call, terminal: None) -> None:
        self.client, self.session_id = client, session_id
        self.show, self.on_terminal = show, on_terminal

    async def run(self, tool_call_id: str, command: str, cwd: str, limit: float, keep: int,
                  signal: AbortSignal | None) -> CommandRun:
        made = await _asked("making a terminal", self.client.create_terminal(
            session_id=self.session_id, command=SHELL, args=["-c", command], cwd=cwd, output_byte_limit=keep))
        terminal = made.terminal_id
        try:
            self.on_terminal(tool_call_id, terminal)
            await self.show(ToolCallProgress(session_update="tool_call_update", tool_call_id=tool_call_id,
                                             status="in_progress", content=[terminal_content(terminal)]))
            timed_out, stopped = await self._wait(terminal, limit, signal)
            if timed_out or stopped:
                with contextlib.suppress(HostError):
                    await _asked("killing the command", self.client.kill_terminal(
                        session_id=self.session_id, terminal_id=terminal))
            out = await _asked("the command's output", self.client.terminal_output(
                session_id=self.session_id, terminal_id=terminal))
        finally:
            with contextlib.suppress(HostError):
                await asyncio.shield(_asked("releasing the terminal", self.client.release_terminal(
                    session_id=self.session_id, terminal_id=terminal)))
        status = out.exit_status
        code = status.exit_code if status is not None and not (timed_out or stopped) else None
        return CommandRun(out.output, code, timed_out=timed_out, truncated=out.truncated,
                          signal=status.signal if status is not None else None)

    async def _wait(self, terminal: str, limit: float, signal: AbortSignal | None) -> tuple[bool, bool]:
        """(timed out, stopped) once the command has exited, `limit` has passed or the run stops."""
        exited = asyncio.ensure_future(self.client.wait_for_terminal_exit(session_id=self.session_id,
                                                                          terminal_id=terminal))
        stop = asyncio.ensure_future(signal.wait()) if signal is not None else None
        try:
            done, _ = await asyncio.wait({exited, *([stop] if stop else [])}, timeout=limit,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (exited, stop):
                if task is not None and not task.done():
                    task.cancel()
        if exited in done and exited.exception() is not None:
            raise HostError(f"waiting for the command failed: {exited.exception()}")
        return not done, stop is not None and stop in done and exited not in done


__all__ = ["EditorFiles", "EditorTerminal", "ANSWER_SECONDS"]
