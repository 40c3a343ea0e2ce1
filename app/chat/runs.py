"""Runs and queues: the agent made on first need, a send (or a steer or follow-up while a reply
runs), the run task the controller owns, stop, and the queue's edits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.agent.tools import BUILTIN_TOOLS, Reach, make_tools
from treechat.chat.errors import ChatError
from treechat.chat.events import Failed, Notice, StatusChanged
from treechat.chat.state import SendKind
from treechat.config.tool_env import tool_environment
from treechat.prompts.attachments import AttachmentError, PreparedPrompt, expand_prompt
from treechat.prompts.extensions import CommandError, expand_command
from treechat.prompts.outside import Undecided
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.system_prompt import bind_system_prompt
from treechat.storage.base import StorageError
from treechat.storage.expanded import template_message
from treechat.storage.model import AssistantMessage, ImageContent

if TYPE_CHECKING:
    from treechat.agent.types import AgentMessage
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.observe import Observer
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.subagents import Subagents
    from treechat.chat.workspace import Workspace


class Runs:
    def __init__(self, s: ChatState, *, model_choice: ModelChoice, extras: Extras, observer: Observer, shown: Shown,
                 workspace: Workspace, subagents: Subagents) -> None:
        self.s = s
        self.subagents = subagents
        self.model_choice = model_choice
        self.extras = extras
        self.observer = observer
        self.shown = shown
        self.workspace = workspace
        self._unsubscribe_agent: Callable[[], None] | None = None
        self._making = asyncio.Lock()  # one agent, though a second send comes while the first asks a question
        self._watchers: list[Callable[[AgentSession], None]] = []  # told of every AgentSession made
        self._halted = False  # `halt`: the stopped run's queue waits for the next prompt

    def watch_agents(self, watcher: Callable[[AgentSession], None]) -> Callable[[], None]:
        self._watchers.append(watcher)
        return lambda: self._watchers.remove(watcher) if watcher in self._watchers else None

    async def ensure_agent(self) -> AgentSession:
        """The AgentSession, made on first need (browsing never writes settings entries). Fails
        before anything is written when there is no model or no key."""
        if self.s.agent is not None:
            return self.s.agent
        async with self._making:
            if self.s.agent is not None:
                return self.s.agent
            return await self._make_agent()

    async def _make_agent(self) -> AgentSession:
        read_only = self.s.read_only
        if read_only:
            raise ChatError(f"Sessions are read-only here ({read_only}): browsing and search work; sending needs a "
                            "writable home (--home DIR or TREECHAT_HOME).")
        if not (self.s.model_ref or self.model_choice.path_model_ref() or self.model_choice.detected):
            self.model_choice.add_local_servers(await self.model_choice.local.found())  # `-p`, or a server started since
        model = self.model_choice.local.known(self.model_choice.resolve_model())  # never waits for the server (issue 27)
        problem = self.s.registry.key_problem(model)
        if problem:
            raise ChatError(problem)
        self.model_choice.local.probe(model)
        try:
            # without a way to ask (print mode without --yes) the bash tool refuses, saying why
            # every built-in tool (`/tools` may turn on one the default set leaves out)
            self.s.builtins = make_tools(BUILTIN_TOOLS, cwd=self.s.cwd, confirm=self.s.confirm, reach=Reach.for_run(
                self.s.cwd, self.s.confirm_read, anywhere=self.s.settings.allow_reads_outside),
                approve=self.workspace.approve, recorder=await self.workspace.file_recorder(),
                writable_git_paths=self.s.settings.writable_git_paths,
                files=self.s.file_host, commands=self.s.command_host, env=tool_environment(self.s.settings),
                spawn=self.subagents.spawn)
            tools = self.s.allowed_tools(self.extras.mcp.tools())  # an MCP server's tools join as it starts
            self.extras.load_extensions()  # the skills the system prompt lists
            compaction = self.s.settings.compaction
            self.s.agent = await AgentSession.create(
                self.s.session, model=model, registry=self.s.registry, tools=tools,
                pinned_tools=self.s.tool_choice.on,
                thinking_level=self.s.settings.thinking, stream_fn=self.s.stream_fn,
                stream_options=self.s.stream_options or None,
                compaction_settings=CompactionSettings(enabled=compaction.enabled,
                                                       reserve_tokens=compaction.reserve_tokens,
                                                       keep_recent_tokens=compaction.keep_recent_tokens))
        except ValueError as err:
            raise ChatError(str(err)) from None
        except (StorageError, OSError) as err:  # the settings entries could not be written
            raise ChatError(f"Could not write to this session: {getattr(err, 'strerror', None) or err}") from None
        self.s.agent.recovery_folders = [Path(self.s.settings.home) / "recovery"]
        self.s.refresh_prompt = bind_system_prompt(self.s.agent, self.s.prompt_builder)
        self._unsubscribe_agent = self.s.agent.subscribe(self.observer.on_agent_event)
        self.s.agent.compactor.on_window = self.model_choice.window_learned
        for watcher in list(self._watchers):
            watcher(self.s.agent)
        self.s.emit(StatusChanged())
        return self.s.agent

    async def send(self, text: str, kind: SendKind = "send", *, attach: Sequence[str] = (),
                   expand: bool = False, images: Sequence[ImageContent] = (),
                   queue_when_idle: bool = False) -> Literal["sent", "queued"]:
        if not text.strip() and not attach and not images:
            raise ChatError("Nothing to send.")
        typed, template = text.strip(), None
        # a read outside the working folder is asked about here, before anything goes out: the
        # project's AGENTS.md and skills, the template or skill used, the files attached
        await self.extras.vet_project_files()
        if expand:
            template = self.extras.template_of(text)
            text = await self.extras.expand(text)
        prepared = await self._attached(text.strip(), attach)
        agent = await self.ensure_agent()
        self.extras.say_starting()
        given = [*prepared.images, *images]
        # a template's message carries what was typed, so the transcript shows that (storage/expanded.py)
        message = None if template is None else template_message(prepared.text, given, template, typed)
        if self.s.is_running or (queue_when_idle and kind != "send"):
            if kind == "follow_up":
                await agent.follow_up(message or prepared.text, given)
            else:
                await agent.steer(message or prepared.text, given)
            return "queued"
        if self.s.preview_id is not None:
            await self.shown.preview(None)
        self.s.abandoned_leaf = None
        if self.s.refresh_prompt is not None:
            self.s.refresh_prompt()  # today's date, AGENTS.md as it is now
        self.start([message] if message is not None else prepared.text, given)
        return "sent"

    def asks_before_sending(self, text: str, *, attach: Sequence[str] = (), expand: bool = False) -> bool:
        if self.s.prompt_builder is not None:
            self.s.prompt_builder.context_files  # noqa: B018 - found: what leads out is pending
        self.extras.load_extensions()
        try:
            if expand:
                text = expand_command(text, self.extras.extensions)
            expand_prompt(text.strip(), self.s.cwd, attach=attach, outside=self.s.outside)
        except Undecided:
            return True
        except (CommandError, AttachmentError):
            pass  # send says so
        return bool(self.s.outside.pending)

    async def _attached(self, text: str, attach: Sequence[str]) -> PreparedPrompt:
        """The prompt with its `@` and `-a` files; one outside the working folder is asked about first."""
        for _ in range(2):
            try:
                return expand_prompt(text, self.s.cwd, attach=attach, outside=self.s.outside)
            except AttachmentError as err:
                raise ChatError(str(err)) from None
            except Undecided:
                await self.extras.ask_outside()
        raise ChatError("A file to attach moved outside the working folder while you were asked; nothing was sent.")

    def start(self, prompt: str | list[AgentMessage], images: Sequence[ImageContent] = ()) -> None:
        assert self.s.agent is not None
        agent = self.s.agent
        self._halted = False

        async def work() -> None:
            await agent.prompt(prompt, images)  # a list of queued messages goes out as one batch
            while agent.has_queued_messages and not agent.is_streaming and not self._halted:
                await agent.continue_()  # queued just as the run ended: delivered, not stranded

        self._spawn(work)

    def start_continue(self, agent: AgentSession) -> None:
        """A run from the transcript as it is (its last message is the prompt to answer)."""
        self._spawn(agent.continue_)

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """The run, in a task the controller owns (`wait_idle`, `close`)."""

        async def run() -> None:
            try:
                await work()
            except StorageError as err:
                self.s.emit(Failed(str(err)))
            except Exception as err:  # noqa: BLE001  the agent turns provider failures into messages; this is the rest
                self.s.emit(Failed(f"Could not send: {err}"))

        self.s.run_task = asyncio.create_task(run())

    async def prompt(self, text: str, *, attach: Sequence[str] = ()) -> AssistantMessage | None:
        late = await self.extras.mcp.wait_started(self.s.settings.mcp_startup_wait)
        if late:
            self.s.emit(Notice(f"MCP server{'s' if len(late) > 1 else ''} {', '.join(late)} still starting after "
                               f"{self.s.settings.mcp_startup_wait:g} s: this prompt goes without "
                               f"{'their' if len(late) > 1 else 'its'} tools for now (mcp_startup_wait in "
                               "config.toml waits longer).", "warning"))
        await self.send(text, attach=attach, expand=True)
        await self.wait_idle()
        agent = self.s.agent
        messages = agent.state.messages if agent is not None else []
        return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)

    async def wait_idle(self) -> None:
        while self.s.run_task is not None and not self.s.run_task.done():
            await asyncio.gather(self.s.run_task, return_exceptions=True)
        self.s.bus.flush()

    async def stop(self) -> None:
        if self.s.preview_id is not None:
            await self.shown.preview(None)
            return
        await self.stop_run()

    async def stop_run(self) -> None:
        if self.s.agent is None or not self.s.is_running:
            return
        batch, after = await self.s.agent.interrupt()
        await self.wait_idle()
        if after:
            await self.s.agent.requeue_follow_ups(after)  # delivered when the batch's run would stop
        if batch:
            self.start(batch)

    async def halt(self) -> None:
        if self.s.agent is None:
            return
        self._halted = True
        await self.s.agent.abort()
        await self.wait_idle()

    def abort(self) -> None:
        if self.s.agent is not None:
            self.s.agent.abort_now()

    async def pull_last_queued(self) -> str | None:
        return await self.s.agent.pop_last_queued() if self.s.agent is not None else None

    async def drop_queued(self, index: int) -> None:
        if self.s.agent is None:
            return
        q = self.s.agent.queue_update()
        if index < len(q.steering):
            await self.s.agent.remove_queued("steer", index)
        elif index - len(q.steering) < len(q.follow_up):
            await self.s.agent.remove_queued("follow_up", index - len(q.steering))

    async def end_agent(self) -> list[str]:
        """Stop a running reply (it is saved as aborted); the queued texts come back."""
        queued: list[str] = []
        if self.s.agent is not None:
            q = self.s.agent.queue_update()
            queued = [*q.steering, *q.follow_up]
            await self.s.agent.clear_queue()
            if self.s.agent.is_streaming:
                await self.s.agent.abort()
            if self._unsubscribe_agent is not None:
                self._unsubscribe_agent()
            self.s.agent = None
        if self.s.run_task is not None:
            await asyncio.gather(self.s.run_task, return_exceptions=True)
            self.s.run_task = None
        return queued
