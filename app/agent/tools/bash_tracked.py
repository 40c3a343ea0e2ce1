"""bash, watching the tracked files: what a command changes in a file edit or write touched is
recorded as a checkpoint too, so a restore knows it (a peer's rewind does not know what its shell
did). The files are looked at once the user has approved the command, before it runs, and again
after it; a change made in between is the command's. Files no edit or write touched are not
watched: a command's new files are not tracked."""

from __future__ import annotations

import os

from treechat.llm.abort import AbortSignal

from .base import OnUpdate, ToolResult
from .bash import BashArgs, BashTool, Confirm
from .changes import FileRecorder, Snapshot
from .host import CommandHost


class TrackedBashTool(BashTool):
    def __init__(self, cwd: str | os.PathLike[str] | None, confirm: Confirm | None, recorder: FileRecorder,
                 host: CommandHost | None = None, *, env: dict[str, str] | None = None) -> None:
        self.recorder = recorder
        self._snapshot: Snapshot | None = None
        super().__init__(cwd, self._snapshot_after(confirm) if confirm is not None else None, host, env=env)

    def _snapshot_after(self, confirm: Confirm) -> Confirm:
        async def approved(command: str) -> bool:
            if not await confirm(command):
                return False
            self._snapshot = await self.recorder.snapshot()
            return True

        return approved

    async def execute(self, tool_call_id: str, args: BashArgs, signal: AbortSignal | None,
                      on_update: OnUpdate) -> ToolResult:
        self._snapshot = None
        try:
            return await super().execute(tool_call_id, args, signal, on_update)
        finally:
            snapshot, self._snapshot = self._snapshot, None
            if snapshot is not None:
                await self.recorder.record_command(tool_call_id, snapshot)
