"""One ACP session: a treechat session, driven by the controller (`treechat.chat.Chat`) as the
app drives it, with the editor as its screen.

- a prompt is sent as the composer sends one (templates, `@path`, images) and streamed back as
  session updates (stream.py); it answers when the run is over, with the stop reason: end_turn,
  max_tokens (the reply hit its token limit), refusal (the provider declined to answer: treechat
  stores that as an error reply saying so), cancelled (session/cancel); a provider that failed is
  a JSON-RPC error carrying its one sentence (the failed reply is stored, as in the app);
- session/cancel stops the run (its partial reply is stored as aborted) and withdraws any
  question still open;
- the questions (permissions.py) go to the editor; its files and terminal (editor.py) serve
  the tools when it offers them.

Prompts to one session are taken one at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal

from acp import RequestError
from acp.interfaces import Client
from acp.schema import AvailableCommand, AvailableCommandsUpdate, PromptResponse, UserMessageChunk

from treechat.agent.events import AgentStart, MessageEnd
from treechat.chat import Chat, ChatError
from treechat.chat.events import ChatEvent, Failed, Notice
from treechat.session.agent_session import AgentSession
from treechat.session.events import PersistFailed, SessionEvent
from treechat.storage.model import AssistantMessage

from .editor import EditorFiles, EditorTerminal
from .history import Replay
from .permissions import Permissions
from .prompt import Block, PromptError, read_prompt
from .stream import Stream, ToolCalls, Update

log = logging.getLogger("treechat.acp")
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

# How the providers word a refusal they stop with (llm/anthropic.py: stop reason refusal;
# llm/openai.py: finish reason content_filter): stored as an error reply with this sentence.
_REFUSALS = ("declined to answer", "content filter")


@dataclass(frozen=True)
class Offered:
    """What the client said it can do (its `clientCapabilities`)."""

    read_files: bool = False
    write_files: bool = False
    terminal: bool = False


def chat_error(err: ChatError | PromptError) -> RequestError:
    """A sentence a person can act on, as the JSON-RPC error the editor shows."""
    return RequestError(-32603, str(err), {"details": str(err)})


class AcpSession:
    def __init__(self, chat: Chat, client: Client, offered: Offered) -> None:
        self.chat, self.client = chat, client
        self.session_id = chat.session_id
        self.calls = ToolCalls(chat.cwd)
        self.stream = Stream(self.calls)
        self.permissions = Permissions(client, self.session_id, self.calls)
        chat.confirm = self.permissions.command
        chat.confirm_read = self.permissions.read
        chat.approve_change = self.permissions.change
        chat.confirm_tool = self.permissions.mcp_call
        if offered.read_files or offered.write_files:
            chat.file_host = EditorFiles(client, self.session_id, read=offered.read_files, write=offered.write_files)
        if offered.terminal:
            chat.command_host = EditorTerminal(client, self.session_id, show=self.send, on_terminal=self.calls.terminal)
        self._turn = asyncio.Lock()
        self._cancelled = asyncio.Event()
        self._last: AssistantMessage | None = None  # the turn's last reply
        self._failures: list[str] = []
        self._listening: AgentSession | None = None
        self._servers_waited = False
        self._unsubscribe = chat.subscribe(self._on_chat)

    # ------------------------------------------------------------ telling the editor

    async def send(self, update: Update | UserMessageChunk | AvailableCommandsUpdate) -> None:
        """One session update; a client gone or failing is logged, never raised (a listener's rule)."""
        try:
            await self.client.session_update(session_id=self.session_id, update=update)
        except Exception as err:  # noqa: BLE001  whatever the connection raises: the run goes on, stored as ever
            log.warning("could not send an update to the editor: %s", err)

    async def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, AgentStart) and self._cancelled.is_set():
            self.chat.abort()  # the cancel came before the run existed
        if isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            self._last = event.message
        if isinstance(event, PersistFailed):
            self._failures.append(f"Could not save to the session ({event.reason}); the run stopped.")
        for update in self.stream.updates(event):
            await self.send(update)

    def _on_chat(self, event: ChatEvent) -> None:
        if isinstance(event, Failed):
            self._failures.append(event.text)
        elif isinstance(event, Notice) and event.severity == "warning":
            log.warning("%s", event.text)

    async def announce_commands(self) -> None:
        """The prompt templates, as the editor's slash commands (`/name args` expands as in the app)."""
        try:
            rows = self.chat.command_rows()
        except Exception as err:  # noqa: BLE001  a template folder that cannot be read: no commands, said once
            log.warning("could not list the prompt templates: %s", err)
            return
        if rows:
            await self.send(AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
                AvailableCommand(name=r.name, description=r.help) for r in rows]))

    async def replay(self) -> None:
        entries = await self.chat.session.get_branch()
        for update in Replay(self.chat.cwd).updates(entries):
            await self.send(update)

    # ------------------------------------------------------------ a turn

    async def prompt(self, blocks: list[Block]) -> PromptResponse:
        try:
            prompt = read_prompt(blocks, self.chat.cwd)
        except PromptError as err:
            raise RequestError.invalid_params({"details": str(err)}) from None
        async with self._turn:
            self._cancelled.clear()
            self._last, self._failures = None, []
            try:
                if not await self._until_cancelled(self._ready()):
                    return PromptResponse(stop_reason="cancelled")
                await self.chat.send(prompt.text, images=prompt.images, expand=True)
            except ChatError as err:
                raise chat_error(err) from None
            await self.chat.wait_idle()
            return PromptResponse(stop_reason=self._stop_reason())

    async def _ready(self) -> None:
        """The agent (its tools made with our questions and hosts), listened to; the MCP servers
        started before the first prompt waited for (each within its startup timeout)."""
        agent = await self.chat.ensure_agent()
        if agent is not self._listening:
            agent.subscribe(self._on_event)
            self._listening = agent
        if not self._servers_waited:
            await self.chat.mcp.wait_started()
            self._servers_waited = True

    async def _until_cancelled(self, work: Awaitable[None]) -> bool:
        """Do `work` unless the turn is cancelled first (then it is stopped); True when done."""
        task = asyncio.ensure_future(work)
        cancel = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait({task, cancel}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancel.cancel()
        if task.done():
            task.result()  # its error, if any
            return not self._cancelled.is_set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False

    def _stop_reason(self) -> StopReason:
        last = self._last
        if self._cancelled.is_set() or (last is not None and last.stop_reason == "aborted"):
            return "cancelled"
        if self._failures:
            raise RequestError(-32603, self._failures[-1], {"details": self._failures[-1]})
        if last is None:
            raise RequestError(-32603, "The model returned nothing.", {"details": "no reply"})
        if last.stop_reason == "length":
            return "max_tokens"
        if last.stop_reason == "error":
            text = last.error_message or "The provider failed."
            if any(words in text for words in _REFUSALS):
                return "refusal"
            raise RequestError(-32603, text, {"details": text})
        return "end_turn"

    def cancel(self) -> None:
        """session/cancel: the run stops; the prompt then answers cancelled."""
        self._cancelled.set()
        self.chat.abort()

    async def close(self) -> None:
        self.cancel()
        self._unsubscribe()
        await self.chat.close()


__all__ = ["AcpSession", "Offered", "chat_error", "StopReason"]
