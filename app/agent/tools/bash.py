"""bash: run a shell command after the user confirms it (a TUI dialog, or --yes in print mode)."""

from __future__ import annotations

import asyncio
import os
import signal as signals
from typing import Any, Awaitable, Callable

from pydantic import BaseModel, Field

from .base import AgentTool, ToolResult, text_result
from .truncate import truncate_tail

Confirm = Callable[[str], Awaitable[bool]]
NO_CONFIRM = ("The bash tool needs confirmation and none is available here; "
              "rerun with --yes to allow shell commands in print mode.")


class BashArgs(BaseModel):
    command: str = Field(description="Shell command to run")
    timeout: float | None = Field(None, gt=0, description="Seconds before the command is killed")


class BashTool(AgentTool):
    name, label = "bash", "Shell"
    description = "Run a shell command in the working directory; returns stdout and stderr (the tail if long)."
    Args = BashArgs
    execution_mode = "sequential"  # commands may depend on each other's side effects

    def __init__(self, cwd: str | os.PathLike[str] | None = None, confirm: Confirm | None = None) -> None:
        self.cwd = str(cwd or os.getcwd())
        self.confirm = confirm

    async def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ToolResult:
        if self.confirm is None:
            return text_result(NO_CONFIRM, is_error=True)
        if not await self.confirm(args.command):
            return text_result("The user declined to run this command.", is_error=True)
        proc = await asyncio.create_subprocess_shell(
            args.command, cwd=self.cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        remove = signal.add_listener(lambda: _kill(proc)) if signal is not None else (lambda: None)
        try:
            output, timed_out = await _communicate(proc, args.timeout)
        finally:
            remove()
        text, cut = truncate_tail(output.decode("utf-8", "replace"))
        if cut:
            text = f"[Output truncated: showing the last {len(text.splitlines())} lines.]\n" + text
        status = proc.returncode
        if signal is not None and signal.aborted:
            return text_result((text + "\n\n(command cancelled)").strip(), is_error=True)
        if timed_out:
            return text_result((text + f"\n\nCommand timed out after {args.timeout:g} s").strip(), is_error=True)
        if status:
            return text_result((text + f"\n\nCommand exited with code {status}").strip(), is_error=True,
                               details={"exitCode": status})
        return text_result(text.rstrip("\n") or "(no output)", details={"exitCode": 0})


async def _communicate(proc: asyncio.subprocess.Process, timeout: float | None) -> tuple[bytes, bool]:
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        return out or b"", False
    except asyncio.TimeoutError:
        _kill(proc)
        out, _ = await proc.communicate()
        return out or b"", True


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signals.SIGKILL)  # the whole group: the shell and what it started
        except (ProcessLookupError, PermissionError):
            pass
