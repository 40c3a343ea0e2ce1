"""What each RPC command does, on the controller (`Chat`) and the AgentSession it makes.

`Handlers.run(command)` answers with the response's `data` (`NO_DATA`: a response without
one), or raises `RpcError` / `ChatError` (one sentence: the error response). Pi's rules where
they differ from the app's: a steer or follow-up sent while nothing runs waits in the queue for
the next prompt; `abort` stops the run and leaves the queue as it is; `prompt` while a run goes on
needs `streamingBehavior`.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Literal, assert_never

from treechat.agent.types import Json, JsonObject
from treechat.chat import Chat, ChatError
from treechat.llm.retry import RetryPolicy
from treechat.session.agent_session import AgentSession, CompactionError
from treechat.storage.base import StorageError
from treechat.storage.model import MessageEntry, message_text
from treechat.storage.special import open_regular

from ..pi_events import PiEvents, compaction_json, model_json
from . import views
from .commands import (
    Abort,
    AbortBash,
    AbortRetry,
    Bash,
    Clone,
    Command,
    Compact,
    CycleModel,
    CycleThinkingLevel,
    ExportHtml,
    FollowUp,
    Fork,
    GetAvailableModels,
    GetCommands,
    GetForkMessages,
    GetLastAssistantText,
    GetMessages,
    GetSessionStats,
    GetState,
    GetTree,
    Label,
    MoveTo,
    NewSession,
    Prompt,
    SetAutoCompaction,
    SetAutoRetry,
    SetFollowUpMode,
    SetModel,
    SetSessionName,
    SetSteeringMode,
    SetThinkingLevel,
    Steer,
    SwitchSession,
)
from .shell import Shell

if TYPE_CHECKING:
    from ..framing import LineSink

BUSY = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
HEADER_BYTES = 65536  # how much of a session file is read for its id (switch_session)


class RpcError(Exception):
    """A command that cannot be done: its sentence is the error response."""


class _NoData(Enum):
    NO_DATA = "no data"


NO_DATA = _NoData.NO_DATA
Reply = Json | _NoData


class Handlers:
    def __init__(self, chat: Chat, out: LineSink, events: PiEvents) -> None:
        self.chat, self.out, self.events = chat, out, events
        self.prefs = views.Preferences()
        self.shell = Shell(chat)
        self._retry_default: tuple[AgentSession, RetryPolicy | None] | None = None  # the agent's own retry policy

    # ------------------------------------------------------------ preferences on every agent

    def apply(self, agent: AgentSession) -> None:
        """The client's settings on a new agent (after a session switch too)."""
        prefs = self.prefs
        if prefs.steering_mode is not None:
            agent.agent.steering_mode = prefs.steering_mode
        if prefs.follow_up_mode is not None:
            agent.agent.follow_up_mode = prefs.follow_up_mode
        if prefs.auto_compaction is not None:
            agent.compactor.settings = replace(agent.compactor.settings, enabled=prefs.auto_compaction)
        if prefs.auto_retry is not None:
            self._set_retry(agent, prefs.auto_retry)

    def _set_retry(self, agent: AgentSession, enabled: bool) -> None:
        options = agent.agent.stream_options
        if self._retry_default is None or self._retry_default[0] is not agent:
            self._retry_default = (agent, options.retry)
        default = self._retry_default[1]
        if enabled:
            policy = default
        else:
            sleep = default.sleep if default is not None else asyncio.sleep
            policy = RetryPolicy(max_retries=0, sleep=sleep)
        agent.agent.stream_options = replace(options, retry=policy)

    # ------------------------------------------------------------ the commands

    async def run(self, command: Command) -> Reply:  # noqa: C901  one case per command
        chat = self.chat
        match command:
            case Prompt():
                return await self._prompt(command)
            case Steer() | FollowUp():
                kind: Literal["steer", "follow_up"] = "steer" if isinstance(command, Steer) else "follow_up"
                await chat.send(command.message, kind, expand=True, images=command.images, queue_when_idle=True)
                return NO_DATA
            case Abort():
                await chat.halt()
                return NO_DATA
            case NewSession():
                await chat.new_session()
                return {"cancelled": False}
            case GetState():
                return await views.state(chat, self.prefs)
            case GetMessages():
                return {"messages": views.messages_json(await views.messages(chat))}
            case SetModel():
                return await self._set_model(command.provider, command.model_id)
            case CycleModel():
                return await self._cycle_model()
            case GetAvailableModels():
                return {"models": [model_json(m) for m in await views.available_models(chat)]}
            case SetThinkingLevel():
                await chat.set_thinking(command.level)
                return NO_DATA
            case CycleThinkingLevel():
                return await self._cycle_thinking()
            case SetSteeringMode() | SetFollowUpMode():
                self._queue_mode(command)
                return NO_DATA
            case Compact():
                agent = await chat.ensure_agent()
                try:
                    return compaction_json(await agent.compact(command.custom_instructions))
                except CompactionError as err:
                    raise RpcError(str(err)) from None
            case SetAutoCompaction():
                self.prefs.auto_compaction = command.enabled
                if chat.agent is not None:
                    self.apply(chat.agent)
                return NO_DATA
            case SetAutoRetry():
                self.prefs.auto_retry = command.enabled
                if chat.agent is not None:
                    self.apply(chat.agent)
                return NO_DATA
            case AbortRetry():
                if self.events.retrying:
                    await chat.halt()
                return NO_DATA
            case Bash():
                return await self.shell.run(command.command)
            case AbortBash():
                self.shell.abort()
                return NO_DATA
            case GetSessionStats():
                return await views.session_stats(chat)
            case ExportHtml():
                return await self._export(command.output_path)
            case SwitchSession():
                await self._switch(command.session_path)
                return {"cancelled": False}
            case Fork():
                return await self._fork(command.entry_id)
            case Clone():
                if chat.leaf_id is None:
                    raise RpcError("Cannot clone session: no current entry selected")
                await chat.fork(chat.leaf_id, "at")
                return {"cancelled": False}
            case GetForkMessages():
                return {"messages": list(await views.fork_messages(chat))}
            case GetLastAssistantText():
                return {"text": views.last_assistant_text(await views.messages(chat))}
            case SetSessionName():
                return await self._name(command.name)
            case GetCommands():
                return {"commands": list(views.commands(chat))}
            case GetTree():
                return await views.tree(chat)
            case MoveTo():
                return await self._move(command)
            case Label():
                await chat.label(command.entry_id, command.label)
                return NO_DATA
            case _:
                assert_never(command)

    async def _prompt(self, command: Prompt) -> Reply:
        if self.chat.is_running and command.streaming_behavior is None:
            raise RpcError(BUSY)
        await self.chat.send(command.message, command.streaming_behavior or "send", expand=True,
                             images=command.images)
        return NO_DATA

    async def _set_model(self, provider: str, model_id: str) -> Reply:
        """One of get_available_models' (Pi's rule: a model with its key, or a local server's)."""
        ref = f"{provider}/{model_id}"
        if ref not in {m.ref for m in await views.available_models(self.chat)}:
            raise RpcError(f"Model not found: {ref}")
        await self.chat.set_model(ref)
        current = self.chat.current_model()
        return model_json(current) if current is not None else None

    async def _cycle_model(self) -> Reply:
        models = await views.available_models(self.chat)
        if len(models) < 2:
            return None
        current = self.chat.current_model()
        refs = [m.ref for m in models]
        at = refs.index(current.ref) if current is not None and current.ref in refs else -1
        await self.chat.set_model(refs[(at + 1) % len(refs)])
        model = self.chat.current_model()
        return {"model": model_json(model) if model is not None else None,
                "thinkingLevel": views.thinking_level(self.chat), "isScoped": False}

    async def _cycle_thinking(self) -> Reply:
        model = self.chat.current_model()
        if model is None or not model.reasoning:
            return None
        levels = views.thinking_levels(model)
        current = views.thinking_level(self.chat)
        at = levels.index(current) if current in levels else -1
        return {"level": await self.chat.set_thinking(levels[(at + 1) % len(levels)])}

    def _queue_mode(self, command: SetSteeringMode | SetFollowUpMode) -> None:
        if isinstance(command, SetSteeringMode):
            self.prefs.steering_mode = command.mode
        else:
            self.prefs.follow_up_mode = command.mode
        if self.chat.agent is not None:
            self.apply(self.chat.agent)

    async def _export(self, output_path: str | None) -> Reply:
        stats = await self.chat.session.storage.get_session_stats()
        if stats.message_count == 0:  # (settings alone are no conversation)
            raise RpcError("Nothing to export yet - start a conversation first")
        default = Path(self.chat.settings.home) / "exports" / f"{self.chat.session_id}.html"
        target = Path(output_path).expanduser() if output_path else default  # noqa: ASYNC240  $HOME, no I/O
        if target.suffix.lower() not in (".html", ".htm"):
            raise RpcError(f"export_html writes an .html file, not {target.name}")
        return {"path": str(await self.chat.export(target))}

    async def _switch(self, ref: str) -> None:
        """A session id or prefix, or a Pi session file (its header's id) of this store."""
        looks_like_file = os.sep in ref or ref.endswith(".jsonl")
        if looks_like_file:
            ref = await asyncio.to_thread(_session_id_of, ref)
        try:
            await self.chat.resume(ref)
        except StorageError as err:
            raise RpcError(str(err)) from None

    async def _fork(self, entry_id: str) -> Reply:
        """Pi forks before a prompt (its text comes back); treechat also forks at any other entry."""
        entry = await self.chat.session.get_entry(entry_id)
        if entry is None:
            raise RpcError(f"Entry {entry_id} not found")
        prompt = isinstance(entry, MessageEntry) and entry.message.role == "user"
        text = message_text(entry.message) if isinstance(entry, MessageEntry) and prompt else ""
        await self.chat.fork(entry_id, "before" if prompt else "at")
        return {"text": text, "cancelled": False}

    async def _name(self, name: str) -> Reply:
        name = name.strip()
        if not name:
            raise RpcError("Session name cannot be empty")
        await self.chat.rename(name)
        await self.out.send({"type": "session_info_changed", "name": name})
        return NO_DATA

    async def _move(self, command: MoveTo) -> Reply:
        chat = self.chat
        try:
            await chat.move_to(command.entry_id)
        except StorageError as err:
            raise RpcError(str(err)) from None
        summary: JsonObject = {}
        if command.summary is not None:
            await chat.session.append_branch_summary(command.summary)
            if chat.agent is not None:
                await chat.agent.reload()
            summary = {"summaryEntryId": chat.leaf_id}
        elif command.summarize:
            await chat.summarize(command.custom_instructions)
            summary = {"summaryEntryId": chat.leaf_id}
        return {"leafId": chat.leaf_id, **summary}


def _session_id_of(path: str) -> str:
    """The id in a Pi session file's header line (read up to HEADER_BYTES)."""
    import json

    try:
        with os.fdopen(open_regular(Path(path)), "rb") as file:  # never a FIFO's endless wait
            first = file.read(HEADER_BYTES).split(b"\n", 1)[0]
    except OSError as err:
        raise RpcError(f"Cannot read {path}: {err.strerror or err}") from None
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session" or not isinstance(header.get("id"), str):
        raise RpcError(f"{path} is not a session file (its first line is no session header)")
    return str(header["id"])


__all__ = ["Handlers", "NO_DATA", "Reply", "RpcError", "ChatError"]
