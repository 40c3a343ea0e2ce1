"""A test editor for `treechat acp`: the ACP package's client side (`spawn_agent_process`)
driving the real command as a child process over pipes, against the loopback fake provider.

`Editor` is the package's `Client`: it records every update and request, answers permission
questions from a list (an option id, or "cancel"), serves files from memory when it offers the
fs capability (so a test sees the tools use the editor's buffer, not the disk), and runs
terminals as local child processes when it offers the terminal capability.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError, spawn_agent_process
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    ContentToolCallContent,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.fake_provider import FakeProvider, Recorded


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    pump: asyncio.Task[None] | None = None
    killed: bool = False
    released: bool = False


class Editor:
    def __init__(self, *, answers: list[str] | None = None, files: dict[str, str] | None = None) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.questions: list[Any] = []  # the tool calls of permission requests
        self.question_options: list[list[str]] = []
        self.answers = deque(answers or [])
        self.files = files if files is not None else {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, Terminal] = {}
        self.created: list[tuple[str, list[str], str | None]] = []
        self.update_came = asyncio.Event()
        self.asked = asyncio.Event()
        self.while_asked: Callable[[], None] = lambda: None  # what the person does before answering

    # -- what the agent tells and asks

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.update_came.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.questions.append(tool_call)
        self.question_options.append([o.option_id for o in options])
        self.asked.set()
        self.while_asked()
        answer = self.answers.popleft() if self.answers else "reject_once"
        if answer == "hold":  # never answered: the agent must withdraw it (a cancel)
            await asyncio.Event().wait()
        if answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if path not in self.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.files[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> CreateTerminalResponse:
        self.created.append((command, list(args or []), cwd))
        process = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.STDOUT,
                                                       stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
        terminal = Terminal(process)

        async def pump() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                terminal.output += chunk

        terminal.pump = asyncio.ensure_future(pump())
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **kwargs: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None,
                                           signal=None if code >= 0 else f"signal {-code}")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        if code is not None and terminal.pump is not None:
            await terminal.pump
        status = None if code is None else TerminalExitStatus(exit_code=code if code >= 0 else None)
        return TerminalOutputResponse(output=terminal.output.decode("utf-8", "replace"), truncated=False,
                                      exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        terminal = self.terminals[terminal_id]
        terminal.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.process.pid, 9)
        await terminal.process.wait()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self.terminals[terminal_id].released = True
        return ReleaseTerminalResponse()

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> CreateElicitationResponse:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    # -- what a test reads

    def of(self, kind: type) -> list[Any]:
        return [u for _, u in self.updates if isinstance(u, kind)]

    def said(self) -> str:
        return "".join(u.content.text for u in self.of(AgentMessageChunk) if isinstance(u.content, TextContentBlock))

    def thought(self) -> str:
        return "".join(u.content.text for u in self.of(AgentThoughtChunk) if isinstance(u.content, TextContentBlock))

    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]

    def call_updates(self, call_id: str) -> list[ToolCallStart | ToolCallProgress]:
        return [u for _, u in self.updates if isinstance(u, ToolCallStart | ToolCallProgress)
                and u.tool_call_id == call_id]

    async def until(self, test: Any) -> None:
        """Until `test()` holds (a wait on each update's arrival, not a poll)."""
        async with asyncio.timeout(60):
            while not test():
                self.update_came.clear()
                await self.update_came.wait()

    def capabilities(self, *, fs: bool = False, terminal: bool = False) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal)


def contents(update: ToolCallStart | ToolCallProgress | Any) -> list[Any]:
    """A tool call update's content (asserted to be there)."""
    assert update.content is not None, update
    return list(update.content)


def text_of(content: Any) -> str:
    """The text of a tool call's content item (asserted to be text)."""
    assert isinstance(content, ContentToolCallContent) and isinstance(content.content, TextContentBlock), content
    return content.content.text


def user_text(request: Recorded) -> str:
    """The last user message of an OpenAI request, as text."""
    for message in reversed(request.body["messages"]):
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else "".join(
                p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def echo(fake: FakeProvider) -> None:
    """The fake answers every request with "echo: " and the last thing the person said."""
    fake.responder = lambda request: fake.openai_reply(["echo: ", user_text(request)])


def call(call_id: str, name: str, **args: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


def tool_results(request: Recorded) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in request.body["messages"] if m["role"] == "tool"]


@contextlib.asynccontextmanager
async def treechat_acp(editor: Editor, fake: FakeProvider, home: Path, *extra: str, cwd: Path | None = None,
                       stderr: Path | None = None) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`treechat acp` as a child process, its stdio connected to `editor` (its stderr to a file)."""
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k", "TREECHAT_HOME": str(home)}
    err_path = stderr or home / "acp-stderr.txt"
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    err = await asyncio.to_thread(open, err_path, "ab")
    with err:
        async with spawn_agent_process(editor, sys.executable, "-m", "treechat", "acp", "--model", "openai/gpt-4.1",
                                       *extra, env=env, cwd=cwd, transport_kwargs={"stderr": err.fileno()}) as (conn, proc):
            yield conn, proc
