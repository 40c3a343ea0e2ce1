"""Runs and queues: the agent made on first need, a send (or a steer or follow-up while a reply
runs), the run task the controller owns, stop, and the queue's edits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.agent.tools import Reach, make_tools
from treechat.attachments import AttachmentError, expand_prompt
from treechat.chat.core import SendKind
from treechat.chat.events import (
    Failed,
    StatusChanged,
)
from treechat.chat.models import ChatError
from treechat.chat.observe import ChatObserver
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.system_prompt import bind_system_prompt
from treechat.storage.base import StorageError
from treechat.storage.model import (
    AssistantMessage,
    ImageContent,
)

if TYPE_CHECKING:
    from treechat.agent.types import AgentMessage


class ChatRuns(ChatObserver):

    async def ensure_agent(self) -> AgentSession:
        """The AgentSession, made on first need (browsing never writes settings entries). Fails
        before anything is written when there is no model or no key."""
        if self._agent is not None:
            return self._agent
        read_only = getattr(self.catalog, "read_only", None)
        if isinstance(read_only, str) and read_only:
            raise ChatError(f"Sessions are read-only here ({read_only}): browsing and search work; sending needs a "
                            "writable home (--home DIR or TREECHAT_HOME).")
        if not (self.model_ref or self._path_model_ref() or self.detected):
            self.add_local_servers(await self.local.found())  # `-p`, or a server started since
        model = self.local.known(self.resolve_model())  # never waits for the server (issue 27)
        problem = self.registry.key_problem(model)
        if problem:
            raise ChatError(problem)
        self.local.probe(model)
        try:
            # without a way to ask (print mode without --yes) the bash tool refuses, saying why
            self._builtins = make_tools(self.tool_names, cwd=self.cwd, confirm=self.confirm, reach=Reach.for_run(
                self.cwd, self.confirm_read, anywhere=getattr(self.settings, "allow_reads_outside", False)),
                approve=self._approve, recorder=await self._file_recorder())
            tools = [*self._builtins, *self.mcp.tools()]  # an MCP server's tools join as it starts
            self.load_extensions()  # the skills the system prompt lists
            compaction = self.settings.compaction
            self._agent = await AgentSession.create(
                self.session, model=model, registry=self.registry, tools=tools,
                thinking_level=self.settings.thinking, stream_fn=self.stream_fn,
                stream_options=self.stream_options or None,
                compaction_settings=CompactionSettings(enabled=compaction.enabled,
                                                       reserve_tokens=compaction.reserve_tokens,
                                                       keep_recent_tokens=compaction.keep_recent_tokens))
        except ValueError as err:
            raise ChatError(str(err)) from None
        except (StorageError, OSError) as err:  # the settings entries could not be written
            raise ChatError(f"Could not write to this session: {getattr(err, 'strerror', None) or err}") from None
        self._agent.recovery_folders = [Path(self.settings.home) / "recovery"]
        self._refresh_prompt = bind_system_prompt(self._agent, self.prompt_builder)
        self._unsubscribe_agent = self._agent.subscribe(self._on_agent_event)
        self._agent.compactor.on_window = self.window_learned
        self._emit(StatusChanged())
        return self._agent

    async def send(self, text: str, kind: SendKind = "send", *, attach: Sequence[str] = (),
                   expand: bool = False) -> Literal["sent", "queued"]:
        """Send a prompt (`@path` tokens and `attach` files go into the message); while a reply
        runs, queue it as a steer (Enter) or follow-up. `expand`: a prompt template or `/skill`
        command becomes what it stands for. Raises ChatError (no model, no key, a file that
        cannot be attached) before anything is written: the caller keeps the text."""
        if not text.strip() and not attach:
            raise ChatError("Nothing to send.")
        if expand:
            text = self.expand(text)
        try:
            prepared = expand_prompt(text.strip(), self.cwd, attach=attach)
        except AttachmentError as err:
            raise ChatError(str(err)) from None
        agent = await self.ensure_agent()
        self._say_starting()
        if self.is_running:
            if kind == "follow_up":
                await agent.follow_up(prepared.text, prepared.images)
            else:
                await agent.steer(prepared.text, prepared.images)
            return "queued"
        if self.preview_id is not None:
            await self.preview(None)
        self.abandoned_leaf = None
        if self._refresh_prompt is not None:
            self._refresh_prompt()  # today's date, AGENTS.md as it is now
        self._start(prepared.text, prepared.images)
        return "sent"

    def _start(self, prompt: str | list[AgentMessage], images: Sequence[ImageContent] = ()) -> None:
        assert self._agent is not None
        agent = self._agent

        async def work() -> None:
            await agent.prompt(prompt, images)  # a list of queued messages goes out as one batch
            while agent.has_queued_messages and not agent.is_streaming:
                await agent.continue_()  # queued just as the run ended: delivered, not stranded

        self._spawn(work)

    def _start_continue(self, agent: AgentSession) -> None:
        """A run from the transcript as it is (its last message is the prompt to answer)."""
        self._spawn(agent.continue_)

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """The run, in a task the controller owns (`wait_idle`, `close`)."""

        async def run() -> None:
            try:
                await work()
            except StorageError as err:
                self._emit(Failed(str(err)))
            except Exception as err:  # the agent turns provider failures into messages; this is the rest
                self._emit(Failed(f"Could not send: {err}"))

        self._run_task = asyncio.create_task(run())

    async def prompt(self, text: str, *, attach: Sequence[str] = ()) -> AssistantMessage | None:
        """Send and wait for the whole run (print mode); returns the run's last assistant message.
        Templates and `/skill` are expanded; MCP servers still starting are waited for (each
        within its startup timeout), so their tools are in the first request."""
        await self.mcp.wait_started()
        await self.send(text, attach=attach, expand=True)
        await self.wait_idle()
        agent = self._agent
        messages = agent.state.messages if agent is not None else []
        return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)

    async def wait_idle(self) -> None:
        """Until no run is under way; what it changed has been told (the pending delta is flushed)."""
        while self._run_task is not None and not self._run_task.done():
            await asyncio.gather(self._run_task, return_exceptions=True)
        self.bus.flush()

    async def stop(self) -> None:
        """Esc: end a preview; else stop the run, and what was queued goes out next in the order
        it would have: the steering first, the follow-ups when that run would stop."""
        if self.preview_id is not None:
            await self.preview(None)
            return
        if self._agent is None or not self.is_running:
            return
        batch, after = await self._agent.interrupt()
        await self.wait_idle()
        if after:
            await self._agent.requeue_follow_ups(after)  # delivered when the batch's run would stop
        if batch:
            self._start(batch)

    def abort(self) -> None:
        """Stop the run now, from a signal handler (Ctrl+C in print mode); nothing is queued next."""
        if self._agent is not None:
            self._agent.abort_now()

    async def pull_last_queued(self) -> str | None:
        return await self._agent.pop_last_queued() if self._agent is not None else None

    async def drop_queued(self, index: int) -> None:
        if self._agent is None:
            return
        q = self._agent.queue_update()
        if index < len(q.steering):
            await self._agent.remove_queued("steer", index)
        elif index - len(q.steering) < len(q.follow_up):
            await self._agent.remove_queued("follow_up", index - len(q.steering))
