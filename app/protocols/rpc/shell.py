"""Pi's RPC `bash` and `abort_bash`: a command the client's user typed (`!ls`), run in the working
folder with the bash tool's bounds (its own process group, killed after DEFAULT_TIMEOUT, output
kept to its last OUTPUT_KEEP bytes), answered with Pi's BashResult, and recorded as a
`bashExecution` message: the next prompt's context carries it (as "Ran `cmd`" and its output).
The client asked for it in so many words, so it is not confirmed again. A message recorded while
a run goes on waits for the run to end, so a reply's tool calls and results stay together.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from treechat.agent.tools.bash import DEFAULT_TIMEOUT, run_shell
from treechat.agent.tools.truncate import truncate_tail
from treechat.agent.types import JsonObject
from treechat.chat import Chat
from treechat.config.tool_env import tool_environment
from treechat.llm.abort import AbortSignal
from treechat.storage.base import StorageError
from treechat.storage.model import BashExecutionMessage
from treechat.text.sanitize import visible_line


class Shell:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self._signal: AbortSignal | None = None
        self._later: set[asyncio.Task[None]] = set()

    async def run(self, command: str) -> JsonObject:
        signal = self._signal = AbortSignal()
        try:
            # without treechat's secrets, as the bash tool: the output goes into the session
            ran = await run_shell(command, self.chat.cwd, DEFAULT_TIMEOUT, signal,
                                  env=tool_environment(self.chat.settings))
        finally:
            self._signal = None
        text = ran.output
        shown, cut = truncate_tail(text)
        stopped = signal.aborted or ran.timed_out
        result: JsonObject = {"output": shown, "exitCode": ran.exit_code, "cancelled": stopped, "truncated": cut}
        full = await asyncio.to_thread(_keep, text) if cut else None
        if full is not None:
            result["fullOutputPath"] = full
        message = BashExecutionMessage(command=command, output=shown, exit_code=ran.exit_code, cancelled=stopped,
                                       truncated=cut, full_output_path=full)
        task = asyncio.create_task(self._record(message))
        self._later.add(task)
        task.add_done_callback(self._later.discard)
        return result

    def abort(self) -> None:
        if self._signal is not None:
            self._signal.abort()

    async def _record(self, message: BashExecutionMessage) -> None:
        """Into the session (and the agent's conversation) once no run is going."""
        await self.chat.wait_idle()
        try:
            await self.chat.session.append_message(message)
        except (StorageError, OSError) as err:  # the answer went out; the record is what failed
            print(f"treechat: could not record the command {visible_line(message.command, 80)}: "
                  f"{visible_line(str(err))}", file=sys.stderr)
            return
        if self.chat.agent is not None:
            self.chat.agent.state.messages.append(message)

    async def close(self) -> None:
        for task in list(self._later):
            await asyncio.gather(task, return_exceptions=True)


def _keep(text: str) -> str:
    """The whole output (as kept) in a private file, for a client that wants more than the tail."""
    fd, path = tempfile.mkstemp(prefix="treechat-bash-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as out:
        out.write(text)
    return path
