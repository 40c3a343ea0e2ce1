"""bash: run a shell command after the user confirms it (a TUI dialog, or --yes in print mode).

Bounded: the command gets `timeout` seconds (DEFAULT_TIMEOUT unless the model asks, at most
MAX_TIMEOUT), then its whole process group is killed; abort (Ctrl+C / Esc) and cancellation kill it
at once. The output is read by us, not by `communicate()`: a background process that keeps the
pipe open (`setsid server &`) would otherwise hold the tool forever after the shell exits, and
a command printing without end (`yes`) would fill memory — we keep the last OUTPUT_KEEP bytes.
With a `CommandHost` (host.py: an editor's terminal, `treechat acp`) the command runs there,
under the same bounds, and reads the same to the model.
The command runs without treechat's secrets in its environment (app/config/tool_env.py): what it
prints goes to the model and into the session.
"""

from __future__ import annotations

import asyncio
import os
import signal as signals
import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, Field

from treechat.llm.abort import AbortSignal

from .base import AgentTool, OnUpdate, ToolResult, answer_unless_stopped, text_result
from .host import CommandHost, CommandRun, HostError
from .truncate import MAX_BYTES, truncate_tail

Confirm = Callable[[str], Awaitable[bool]]
NO_CONFIRM = ("The bash tool needs confirmation and none is available here; "
              "rerun with --yes to allow shell commands in print mode.")
DEFAULT_TIMEOUT = 120.0  # seconds; builds and test runs fit, a command waiting on input does not hang the run
MAX_TIMEOUT = 600.0  # what a model may ask for at most
OUTPUT_KEEP = 1_000_000  # bytes of output kept (the tail); the model is shown at most truncate_tail's 50 KB
PIPE_GRACE = 0.5  # after the shell exits, how long its output pipe may stay open before we stop reading
UPDATE_EVERY = 0.1  # seconds between two partial results of a command's output (the first goes at once)


class BashArgs(BaseModel):
    command: str = Field(description="Shell command to run")
    timeout: float | None = Field(
        None, gt=0, description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})"
    )


class BashTool(AgentTool[BashArgs]):
    name, label = "bash", "Shell"
    description = "Run a shell command in the working directory; returns stdout and stderr (the tail if long)."
    Args = BashArgs
    execution_mode = "sequential"  # commands may depend on each other's side effects
    timeout = None  # bounded by the command's own timeout, which starts after the user confirms

    def __init__(self, cwd: str | os.PathLike[str] | None = None, confirm: Confirm | None = None,
                 host: CommandHost | None = None, *, env: dict[str, str] | None = None) -> None:
        """`env`: the command's environment here (None: this process's, its secrets withheld by the
        built-in rules; the controller hands the one config.toml's providers and `tool_env` make)."""
        from treechat.config.tool_env import tool_environment

        self.cwd = str(cwd or os.getcwd())
        self.confirm = confirm
        self.host = host  # None: here, in a child process
        self.env = tool_environment() if env is None else env

    async def execute(self, tool_call_id: str, args: BashArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        """Ask, then run (the run's stop signal also ends the asking: a stopped run never waits
        for an answer, and a dialog still open is withdrawn by its front end)."""
        if self.confirm is None:
            return text_result(NO_CONFIRM, is_error=True)
        allowed = await answer_unless_stopped(self.confirm(args.command), signal)
        if signal is not None and signal.aborted:  # stopped while asked (Esc, Ctrl+C): nobody declined
            return text_result("(command cancelled before it started)", is_error=True)
        if not allowed:
            return text_result("The user declined to run this command.", is_error=True)
        limit = min(args.timeout or DEFAULT_TIMEOUT, MAX_TIMEOUT)
        if self.host is not None:
            try:
                ran = await self.host.run(tool_call_id, args.command, self.cwd, limit, OUTPUT_KEEP, signal)
            except HostError as err:
                return text_result(f"The command could not be started: {err}", is_error=True)
        else:
            await on_update(ToolResult(content=[]))  # it runs (Pi tells this too)
            ran = await run_shell(args.command, self.cwd, limit, signal, _Progress(on_update), env=self.env)
        return _result(ran, limit, signal)


class _Progress:
    """The output so far as a partial result (its tail, as the model would see it): the first
    output at once, then at most every UPDATE_EVERY seconds (the end result has it all)."""

    def __init__(self, on_update: OnUpdate) -> None:
        self.on_update = on_update
        self.last: float | None = None

    async def __call__(self, kept: bytearray) -> None:
        now = time.monotonic()
        if self.last is not None and now - self.last < UPDATE_EVERY:
            return
        self.last = now
        text, _ = truncate_tail(bytes(kept[-2 * MAX_BYTES:]).decode("utf-8", "replace"))
        await self.on_update(text_result(text, details={}))


async def run_shell(command: str, cwd: str, limit: float, signal: AbortSignal | None,
                    on_output: Callable[[bytearray], Awaitable[None]] | None = None, *,
                    env: dict[str, str] | None = None) -> CommandRun:
    """Run `command` with the shell in `cwd`, its own process group, no input: killed (the whole
    group) after `limit` seconds, on `signal`, or when the caller is cancelled. `on_output` is
    handed the output kept so far whenever more came (not to keep: it changes). `env`: its
    environment (None: this process's without treechat's secrets, app/config/tool_env.py)."""
    from treechat.config.tool_env import tool_environment

    proc = await asyncio.create_subprocess_shell(
        command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL, start_new_session=True, env=tool_environment() if env is None else env,
    )
    remove = signal.add_listener(lambda: _kill(proc)) if signal is not None else (lambda: None)
    try:
        output, timed_out, held_open = await _collect(proc, limit, on_output)
    except BaseException:  # cancelled (the loop stopping the tool): never leave the command running
        _kill(proc)
        raise
    finally:
        remove()
    return CommandRun(output.decode("utf-8", "replace"), proc.returncode, timed_out=timed_out,
                      truncated=len(output) >= OUTPUT_KEEP, held_open=held_open)


def _result(ran: CommandRun, limit: float, signal: AbortSignal | None) -> ToolResult:
    """What the model is told, wherever the command ran."""
    text, cut = truncate_tail(ran.output)
    if cut or ran.truncated:
        text = f"[Output truncated: showing the last {len(text.splitlines())} lines.]\n" + text
    text = text.rstrip("\n")
    if ran.held_open:
        text += "\n\n(a background process still holds the output open; its later output is not shown)"
    status = ran.exit_code
    if signal is not None and signal.aborted:
        return text_result((text + "\n\n(command cancelled)").strip(), is_error=True)
    if ran.timed_out:
        return text_result((text + f"\n\nCommand timed out after {limit:g} s").strip(), is_error=True)
    if status is None and ran.signal:
        return text_result((text + f"\n\nCommand ended by signal {ran.signal}").strip(), is_error=True)
    if status:
        return text_result((text + f"\n\nCommand exited with code {status}").strip(), is_error=True,
                           details={"exitCode": status})
    return text_result(text.rstrip("\n") or "(no output)", details={"exitCode": 0})


async def _collect(proc: asyncio.subprocess.Process, limit: float,
                   on_output: Callable[[bytearray], Awaitable[None]] | None = None) -> tuple[bytes, bool, bool]:
    """(the output's tail, timed out, a survivor held the pipe open) once the shell has exited."""
    assert proc.stdout is not None
    stream = proc.stdout
    kept = bytearray()

    async def pump() -> None:
        while chunk := await stream.read(65536):
            kept.extend(chunk)
            if len(kept) > OUTPUT_KEEP:
                del kept[: len(kept) - OUTPUT_KEEP]
            if on_output is not None:
                await on_output(kept)

    reader = asyncio.ensure_future(pump())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(_exited(proc), limit)
        except TimeoutError:
            timed_out = True
            _kill(proc)
            await _exited(proc)
        done, _ = await asyncio.wait({reader}, timeout=PIPE_GRACE)
        held_open = reader not in done
    finally:
        if not reader.done():
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            # Let go of the pipe a survivor still holds; asyncio has no public way to close one
            # subprocess pipe, and leaving it open would keep a descriptor per such command.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
    return bytes(kept), timed_out, held_open


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the shell has exited. Not `proc.wait()`: asyncio returns from that only once the
    output pipe is closed too, which a background process can keep open indefinitely."""
    pause = 0.002
    while proc.returncode is None:
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signals.SIGKILL)  # the whole group: the shell and what it started
        except (ProcessLookupError, PermissionError):
            pass
