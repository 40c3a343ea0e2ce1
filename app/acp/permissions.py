"""What treechat asks a person, asked through the editor (`session/request_permission`).

The four questions the app asks in a dialog: a shell command, a read outside the working folder,
an edit or write (with its diff), an MCP tool call. The options are the app's answers: "Allow"
(allow_once), "Allow for this session" (allow_always: this exact command, this path, every edit
inside the working folder, this MCP tool), "Reject" (reject_once). A change outside the working
folder is asked each time (no allow_always), as in the app. A question the editor cancels, or
cannot answer, is a no; a stopped run withdraws its question (the tools stop waiting). A
sub-agent's question (the task tool's child) says so in its title: "task 'fix tests' asks: …".
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from acp import RequestError
from acp.interfaces import Client
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate
from pydantic import ValidationError

from treechat.agent.asker import current_asker
from treechat.agent.tools.changes import ProposedChange
from treechat.agent.types import JsonObject

from .calls import Content, absolute, change_content, describe, text_content
from .stream import ToolCalls

log = logging.getLogger("treechat.acp")
Answer = Literal["once", "always", "no"]

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"


def options(always: str | None) -> list[PermissionOption]:
    found = [PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once")]
    if always:
        found.append(PermissionOption(option_id=ALLOW_ALWAYS, name=always, kind="allow_always"))
    found.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    return found


class Permissions:
    """The session's answers so far ("for this session"), and the questions."""

    def __init__(self, client: Client, session_id: str, calls: ToolCalls) -> None:
        self.client, self.session_id, self.calls = client, session_id, calls
        self.commands: set[str] = set()
        self.paths: set[tuple[str, str]] = set()  # (tool, real path)
        self.edits = False  # every change inside the working folder
        self.mcp: set[tuple[str, str]] = set()  # (server, tool)
        self._asked = 0

    async def command(self, command: str) -> bool:
        """bash's question."""
        if command in self.commands:
            return True
        found = self.calls.find("bash", lambda args: args.get("command") == command)
        call = self._call(found, "bash", {"command": command})
        answer = await self._ask(call, "Allow this command for this session")
        if answer == "always":
            self.commands.add(command)
        return answer != "no"

    async def read(self, tool: str, path: str, folder: str) -> bool:
        """read's, ls's and grep's question about a path outside the working folder."""
        if (tool, path) in self.paths:
            return True
        cwd = self.calls.cwd
        found = self.calls.find(tool, lambda args: absolute(str(args.get("path", ".")), cwd) == path)
        call = self._call(found, tool, {"path": path})
        call.title = f"{call.title} (outside the working folder)"
        call.content = [text_content(f"{path} is outside the working folder {folder}.")]
        answer = await self._ask(call, "Allow this path for this session")
        if answer == "always":
            self.paths.add((tool, path))
        return answer != "no"

    async def change(self, change: ProposedChange) -> bool | str:
        """edit's and write's question, with the change to make."""
        shown = change_content(change)
        found = self.calls.find(change.tool, lambda args: absolute(str(args.get("path", "")), self.calls.cwd)
                                in (change.real_path, change.path))
        if found is not None:
            self.calls.changes[found[0]] = shown  # the call's last update shows it, once made
        if not change.outside and self.edits:
            return True
        call = self._call(found, change.tool, {"path": change.real_path})
        call.content = list(shown)
        if change.outside:
            call.title = f"{call.title} (OUTSIDE the working folder {change.folder})"
        answer = await self._ask(call, None if change.outside else "Allow edits for this session")
        if answer == "always":
            self.edits = True
        return answer != "no"

    async def mcp_call(self, server: str, tool: str, arguments: str) -> bool:
        """An MCP tool's question (a server not marked trust = true)."""
        if (server, tool) in self.mcp:
            return True
        call = self._call(self.calls.find(tool), tool, {})
        call.content = [text_content(f"```json\n{arguments}\n```")]
        answer = await self._ask(call, "Allow this tool for this session")
        if answer == "always":
            self.mcp.add((server, tool))
        return answer != "no"

    def _call(self, found: tuple[str, JsonObject] | None, name: str, fallback: JsonObject) -> ToolCallUpdate:
        """The tool call a question is about (the running call, else one made for the question: a
        sub-agent's calls are not the editor's)."""
        if found is None or current_asker() is not None:
            self._asked += 1
            call_id, args = f"treechat-question-{self._asked}", fallback
        else:
            call_id, args = found
        about = describe(name, args, self.calls.cwd)
        return ToolCallUpdate(tool_call_id=call_id, title=about.title, kind=about.kind, status="pending",
                              locations=about.locations or None, raw_input=json.loads(json.dumps(args, default=str)))

    async def _ask(self, call: ToolCallUpdate, always: str | None) -> Answer:
        if (who := current_asker()) is not None:  # a sub-agent's (the task tool's) question
            call.title = f"{who.title} asks: {call.title}"
        try:
            reply = await self.client.request_permission(session_id=self.session_id, tool_call=call,
                                                         options=options(always))
        except (RequestError, ValidationError, ConnectionError) as err:
            log.warning("the editor did not answer a permission question (%s); taken as a no", err)
            return "no"
        outcome = reply.outcome
        if not isinstance(outcome, AllowedOutcome):
            return "no"  # cancelled
        if outcome.option_id == ALLOW_ALWAYS and always:
            return "always"
        return "once" if outcome.option_id == ALLOW_ONCE else "no"


__all__ = ["Permissions", "options", "ALLOW_ONCE", "ALLOW_ALWAYS", "REJECT_ONCE", "Content"]
