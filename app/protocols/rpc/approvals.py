"""Approvals as requests to the RPC client, in the shape of Pi's extension UI dialogs
(docs/rpc.md, "Extension UI Protocol"): we write

    {"type": "extension_ui_request", "id", "method": "confirm", "title", "message", "timeout",
     "approval": {"kind": "bash" | "edit" | "write" | "read_outside" | "mcp", …what is asked about,
                  "asker": {"kind": "task", "description", "sessionId"} when a sub-agent asks}}

and the client answers {"type": "extension_ui_response", "id", "confirmed": true | false} (or
"cancelled": true). Only `confirmed: true` allows; no, cancelled, or no answer within `timeout`
(milliseconds in the request) refuses, and the model is told it was refused. A run that is
stopped withdraws its question (the answer, if it comes, is ignored). With `--yes` nothing is
asked: bash, reads outside the working folder and MCP calls are allowed, edits inside the
working folder too (never outside it), as in print mode.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from treechat.agent.asker import current_asker
from treechat.agent.tools import approve_inside
from treechat.agent.tools.changes import ProposedChange

from .commands import UiResponse

if TYPE_CHECKING:
    from treechat.agent.types import JsonObject
    from treechat.chat import Chat

    from ..framing import LineSink

APPROVAL_TIMEOUT = 120.0  # seconds a question waits for the client's answer


class Approvals:
    def __init__(self, out: LineSink, timeout: float = APPROVAL_TIMEOUT) -> None:
        self.out = out
        self.timeout = timeout
        self._waiting: dict[str, asyncio.Future[bool]] = {}

    async def ask(self, title: str, message: str, approval: JsonObject) -> bool:
        """Ask the client; True only for its `confirmed: true` within the timeout. A sub-agent's
        question (the task tool's child) names it in the title and in `approval.asker`."""
        if (who := current_asker()) is not None:
            title = f"{who.title} asks: {title}"
            approval = {**approval, "asker": {"kind": who.kind, "description": who.description,
                                              "sessionId": who.session_id}}
        request = str(uuid.uuid4())
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[request] = answer
        try:
            await self.out.send({"type": "extension_ui_request", "id": request, "method": "confirm", "title": title,
                                 "message": message, "timeout": round(self.timeout * 1000), "approval": approval})
            return await asyncio.wait_for(answer, self.timeout)
        except TimeoutError:
            return False
        finally:
            self._waiting.pop(request, None)

    def answer(self, response: UiResponse) -> bool:
        """The client's answer; False when nothing asked under that id is waiting (answered, timed
        out, withdrawn, or never asked)."""
        waiting = self._waiting.get(response.request)
        if waiting is None or waiting.done():
            return False
        waiting.set_result(response.confirmed is True and not response.cancelled)
        return True

    def refuse_all(self) -> None:
        """The client is gone: every open question is refused."""
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_result(False)

    # ------------------------------------------------------------ what the chat asks

    async def bash(self, command: str) -> bool:
        return await self.ask("Run this command?", command, {"kind": "bash", "command": command})

    async def read_outside(self, tool: str, path: str, folder: str) -> bool:
        return await self.ask(f"Let {tool} read outside the working folder?",
                              f"{path} is outside {folder}", {"kind": "read_outside", "tool": tool, "path": path,
                                                              "folder": folder})

    async def change(self, change: ProposedChange) -> bool | str:
        where = " (outside the working folder)" if change.outside else ""
        return await self.ask(f"Apply this {change.tool}{where}?", change.diff,
                              {"kind": change.tool, "path": change.path, "realPath": change.real_path,
                               "outside": change.outside, "created": change.created, "added": change.added,
                               "removed": change.removed, "diff": change.diff})

    async def mcp(self, server: str, tool: str, shown: str) -> bool:
        return await self.ask(f"Call {tool} of the MCP server {server}?", shown,
                              {"kind": "mcp", "server": server, "tool": tool, "arguments": shown})


async def _allow(*_: object) -> bool:
    return True


def install(chat: Chat, approvals: Approvals, *, yes: bool) -> None:
    """The chat asks `approvals` (or, with `yes`, nobody) before bash, reads outside, edits, MCP calls."""
    if yes:
        chat.confirm, chat.confirm_read, chat.confirm_tool = _allow, _allow, _allow
        chat.approve_change = approve_inside()
        return
    chat.confirm, chat.confirm_read = approvals.bash, approvals.read_outside
    chat.approve_change, chat.confirm_tool = approvals.change, approvals.mcp
