"""Runs and queues (issue 39: several at once, each on its own branch): the agent at rest at the
leaf, made on first need; a send, which steers or queues a follow-up for the run of the branch on
screen and elsewhere starts a new run (up to config.toml's `max_runs`); the runs' tasks the
controller owns; stop; the queue's edits.

A run is an agent with a writer pinned to its branch (`Session.branch`): it appends under its own
tip, and the leaf moves with it only while the person is at that tip. A run that ends where the
person is comes back to rest there (its transcript is the path's); one that ends elsewhere is let go.

Work that does not collide: a run that can change files (edit, write or bash among its tools),
started while such a run goes in the checkout, works in a git worktree of its own (its tools, its
Boundary and its checkpoints there, named as the checkout's files: chat/workspace.py); outside git
it is refused with one line. The worktree goes when the run ends; the person's checkout is
untouched until they pick that branch (the restore offered after a move).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.agent.tools import BUILTIN_TOOLS
from treechat.agent.tools.refused import RefusedTool
from treechat.chat.errors import ChatError
from treechat.chat.events import Failed, Notice, RunsChanged, StatusChanged
from treechat.chat.state import Run, SendKind
from treechat.prompts.attachments import AttachmentError, PreparedPrompt, expand_prompt
from treechat.prompts.extensions import CommandError, expand_command
from treechat.prompts.outside import Undecided
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.system_prompt import bind_system_prompt
from treechat.storage.base import StorageError
from treechat.storage.model import AssistantMessage, ImageContent
from treechat.text.expanded import template_message

if TYPE_CHECKING:
    from treechat.agent.types import AgentMessage
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.observe import Observer
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.subagents import Subagents
    from treechat.chat.workspace import Workspace
    from treechat.llm.types import ModelInfo
    from treechat.session.session import BranchWriter
    from treechat.workspace.worktrees import Worktree

FILE_TOOLS = frozenset({"edit", "write", "bash"})  # a run with one of these can change files
# what a compared run's edit, write and bash answer outside git (worktrees_for)
COMPARED_OUTSIDE_GIT = ("Refused: this is one of several runs answering the same prompt at once in a folder that "
                        "is not a git repository, so no run may change files or run commands here (they would "
                        "race each other). Answer with what read, ls and grep show; say what you would change.")


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
        self._making = asyncio.Lock()  # one agent, though a second send comes while the first asks a question
        self._watchers: list[Callable[[AgentSession], None]] = []  # told of every AgentSession made
        self._started = 0  # runs started in this chat: their ids

    def watch_agents(self, watcher: Callable[[AgentSession], None]) -> Callable[[], None]:
        self._watchers.append(watcher)
        return lambda: self._watchers.remove(watcher) if watcher in self._watchers else None

    async def ensure_agent(self) -> AgentSession:
        """The agent of the branch on screen: its run's, else the one at rest at the leaf, made on
        first need (browsing never writes settings entries). Fails before anything is written when
        there is no model or no key."""
        if self.s.agent is not None:
            return self.s.agent
        async with self._making:
            if self.s.agent is not None:
                return self.s.agent
            return (await self._make_agent()).agent

    async def _make_agent(self, worktree: Worktree | None = None) -> Run:
        self.check_writable()
        if not (self.s.model_ref or self.model_choice.path_model_ref() or self.model_choice.detected):
            self.model_choice.add_local_servers(await self.model_choice.local.found())  # `-p`, or a server started since
        model = self.model_choice.local.known(self.model_choice.resolve_model())  # never waits for the server (issue 27)
        problem = self.s.registry.key_problem(model)
        if problem:
            raise ChatError(problem)
        run = await self.new_run(self.s.session.branch(), model, worktree)  # at the leaf until a run pins it to its branch
        self.s.resting = run
        for watcher in list(self._watchers):
            watcher(run.agent)
        self.s.emit(StatusChanged())
        return run

    def check_writable(self) -> None:
        read_only = self.s.read_only
        if read_only:
            raise ChatError(f"Sessions are read-only here ({read_only}): browsing and search work; sending needs a "
                            "writable home (--home DIR or TREECHAT_HOME).")

    async def new_run(self, writer: BranchWriter, model: ModelInfo, worktree: Worktree | None = None, *,
                      changes_refused: str | None = None) -> Run:
        """An agent on `writer` with `model` (its key checked by the caller), not started: the
        settings entries its path lacks are written under the writer's tip; its tools work in
        `worktree` when given (None: in the person's folder); `changes_refused`: why its edit,
        write and bash refuse every call (offered all the same: the branch records no narrower set)."""
        self.model_choice.local.probe(model)
        cwd = self.s.cwd if worktree is None else worktree.cwd
        try:
            # without a way to ask (print mode without --yes) the bash tool refuses, saying why
            # every built-in tool (`/tools` may turn on one the default set leaves out); their
            # checkpoints go on this agent's branch
            builtins = self.s.built_in_tools(BUILTIN_TOOLS, cwd, approve=self.workspace.approve,
                                             recorder=await self.workspace.file_recorder(writer, worktree),
                                             spawn=self.subagents.spawn)
            if changes_refused is not None:
                builtins = [RefusedTool(t, changes_refused) if t.name in FILE_TOOLS else t for t in builtins]
            tools = self.s.allowed_tools(builtins, self.extras.mcp.tools())  # an MCP server's tools join as it starts
            self.extras.load_extensions()  # the skills the system prompt lists
            compaction = self.s.settings.compaction
            agent = await AgentSession.create(
                writer, model=model, registry=self.s.registry, tools=tools,
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
        agent.recovery_folders = [Path(self.s.settings.home) / "recovery"]
        run = Run(agent, builtins, bind_system_prompt(agent, self.s.prompt_builder, None if worktree is None else cwd),
                  lambda: None, worktree=worktree)
        observe = self.observer.on_agent_event
        run.unsubscribe = agent.subscribe(lambda event: observe(event, run))
        agent.compactor.on_window = lambda window: self.model_choice.window_learned(window, agent)
        return run

    def check_room(self) -> None:
        """A new run needs room under config.toml's `max_runs`: ChatError (said before anything is
        written) when there is none."""
        going, most = len(self.s.runs), self.s.settings.max_runs
        if going >= most:
            raise ChatError(f"{going} runs are going already, as many as max_runs in config.toml allows: stop one "
                            "(Esc on its branch) or wait for one to end; nothing was sent.")

    def can_change_files(self, run: Run) -> bool:
        return any(t.name in FILE_TOOLS and not isinstance(t, RefusedTool)
                   for t in self.s.allowed_tools(run.builtins, ()))

    async def worktrees_for(self, count: int) -> tuple[list[Worktree | None], str | None]:
        """Where a comparison's runs (one prompt, several models; chat/compare.py) work, and why
        their edit, write and bash refuse (None: they do not): in a git repository each that can
        change files works in a worktree of its own, so the checkout stays as it is until the
        person picks one; outside git they would race each other in the person's folder, so they
        change nothing there (said once); with no such tool each works in the person's folder.
        ChatError (nothing sent, none left) when a worktree cannot be made."""
        choice = self.s.tool_choice
        if not any(n not in choice.off and (n in choice.default or n in choice.on) for n in FILE_TOOLS):
            return [None] * count, None
        from treechat.workspace.worktrees import root_of

        if await asyncio.to_thread(root_of, self.s.cwd) is None:
            self.s.emit(Notice(f"This folder is not a git repository: the {count} compared runs would change its files "
                               "at once, so their edit, write and bash refuse (read, ls and grep work); in a git "
                               "repository each works in a worktree of its own.", "warning"))
            return [None] * count, COMPARED_OUTSIDE_GIT
        made: list[Worktree | None] = []
        try:
            for n in range(count):
                made.append(await self.workspace.make_worktree(f"r{self._started + 1 + n}"))
        except BaseException:
            await self.drop_worktrees(made)
            raise
        self.s.emit(Notice(f"Each of the {count} runs changes files in a git worktree of its own: your files stay as "
                           "they are until you pick one (its changes are then offered; from the shell: treechat "
                           "restore SESSION --to ENTRY).", "warning"))
        return made, None

    async def drop_worktrees(self, trees: Sequence[Worktree | None]) -> None:
        for tree in trees:
            if tree is not None:
                await self.workspace.drop_worktree(tree)

    def _checkout_taken(self) -> bool:
        """A run that can change files goes in the person's checkout."""
        return any(r.going and r.worktree is None and r.changes_files for r in self.s.runs.values())

    async def _placed(self, run: Run) -> Run:
        """The agent that starts the new run: `run` (at rest at the leaf) in the checkout, or one
        made afresh in a git worktree of its own when another run changes files in the checkout;
        ChatError (nothing sent) outside git."""
        if not self._checkout_taken() or not self.can_change_files(run):
            return run
        from treechat.workspace.worktrees import root_of

        if await asyncio.to_thread(root_of, self.s.cwd) is None:
            raise ChatError("A run that can change files is going in this folder, which is not a git repository: a "
                            "second one would race it. Wait for it to end or stop it (Esc on its branch), or turn "
                            "edit, write and bash off (/tools) to ask without them; nothing was sent.")
        tree = await self.workspace.make_worktree(f"r{self._started + 1}")
        try:
            placed = await self._make_agent(tree)
        except BaseException:
            await self.workspace.drop_worktree(tree)
            raise
        if placed is not run:
            run.unsubscribe()
        self.s.emit(Notice("Another run changes files in your folder: this one works in a git worktree of its own, and "
                           "your files stay as they are until you pick its branch (its changes are then offered).",
                           "warning"))
        return placed

    async def send(self, text: str, kind: SendKind = "send", *, attach: Sequence[str] = (),
                   expand: bool = False, images: Sequence[ImageContent] = (),
                   queue_when_idle: bool = False) -> Literal["sent", "queued"]:
        if not text.strip() and not attach and not images:
            raise ChatError("Nothing to send.")
        typed, template = text.strip(), None
        queue_anyway = queue_when_idle and kind != "send"
        if self.s.run_here() is None and not queue_anyway:
            self.check_room()
        # a read outside the working folder is asked about here, before anything goes out: the
        # project's AGENTS.md and skills, the template or skill used, the files attached
        await self.extras.vet_project_files()
        if expand:
            template = self.extras.template_of(text)
            text = await self.extras.expand(text)
        prepared = await self.attached(text.strip(), attach)
        agent = await self.ensure_agent()
        self.extras.say_starting()
        given = [*prepared.images, *images]
        # a template's message carries what was typed, so the transcript shows that (app/text/expanded.py)
        message = None if template is None else template_message(prepared.text, given, template, typed)
        here = self.s.run_here()
        if here is not None or queue_anyway:  # the run of the branch on screen (or Pi's RPC: the next one)
            agent = here.agent if here is not None else agent
            if kind == "follow_up":
                await agent.follow_up(message or prepared.text, given)
            else:
                await agent.steer(message or prepared.text, given)
            return "queued"
        self.check_room()  # (again: a run may have started while this one was asked about)
        assert self.s.resting is not None
        self.s.resting = await self._placed(self.s.resting)
        if self.s.preview_id is not None:
            await self.shown.preview(None)
        self.s.abandoned_leaf = None
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

    async def attached(self, text: str, attach: Sequence[str]) -> PreparedPrompt:
        """The prompt with its `@` and `-a` files; one outside the working folder is asked about first."""
        for _ in range(2):
            try:
                return expand_prompt(text, self.s.cwd, attach=attach, outside=self.s.outside)
            except AttachmentError as err:
                raise ChatError(str(err)) from None
            except Undecided:
                await self.extras.ask_outside()
        raise ChatError("A file to attach moved outside the working folder while you were asked; nothing was sent.")

    def launch(self, run: Run, prompt: str | list[AgentMessage], images: Sequence[ImageContent] = ()) -> str:
        """Start `run` (made by `new_run`, not the one at rest) on its writer's branch; its id."""
        self._go(run, self._prompting(run, prompt, images), new=True)
        assert run.id is not None
        return run.id

    def start(self, prompt: str | list[AgentMessage], images: Sequence[ImageContent] = ()) -> None:
        """A new run at the leaf, by the agent at rest there (made by `ensure_agent`)."""
        run = self.s.resting
        assert run is not None
        self.s.resting = None
        self._go(run, self._prompting(run, prompt, images), new=True)

    def _prompting(self, run: Run, prompt: str | list[AgentMessage],
                   images: Sequence[ImageContent] = ()) -> Callable[[], Awaitable[None]]:
        agent = run.agent

        async def work() -> None:
            await agent.prompt(prompt, images)  # a list of queued messages goes out as one batch
            while agent.has_queued_messages and not agent.is_streaming and not run.halted:
                await agent.continue_()  # queued just as the run ended: delivered, not stranded

        return work

    def start_continue(self, agent: AgentSession) -> None:
        """A run from the transcript as it is (its last message is the prompt to answer), at the leaf."""
        run = self.s.resting
        assert run is not None and run.agent is agent
        self.s.resting = None
        self._go(run, agent.continue_, new=True)

    def _go(self, run: Run, work: Callable[[], Awaitable[None]], *, new: bool) -> None:
        """The run, in a task the controller owns (`wait_idle`, `close`); a new one gets its id and
        its writer is pinned to the branch where it starts."""
        if new:
            self._started += 1
            run.id = f"r{self._started}"
            run.writer.pin(run.id)
            run.changes_files = self.can_change_files(run)
        run.halted, run.live = False, True
        assert run.id is not None
        self.s.runs[run.id] = run

        async def going() -> None:
            try:
                await work()
            except StorageError as err:
                self.s.emit(Failed(str(err)))
            except Exception as err:  # noqa: BLE001  the agent turns provider failures into messages; this is the rest
                self.s.emit(Failed(f"Could not send: {err}"))
            finally:
                if not run.stopping:
                    await self._ended(run)

        run.task = asyncio.create_task(going())
        self.s.emit(RunsChanged())

    async def _ended(self, run: Run) -> None:
        """A run is over: where the person is (the leaf at its tip) it comes back to rest there,
        in place of the one at rest (its transcript is the path's); elsewhere it is let go."""
        if run.id is not None and self.s.runs.get(run.id) is run:
            del self.s.runs[run.id]
        run.task, run.live = None, False
        current = self.s.current
        if run.worktree is not None:  # its files are in its checkpoints: the worktree goes, never the run's rest
            tree, run.worktree = run.worktree, None
            run.unsubscribe()
            await self.workspace.drop_worktree(tree)
            if current is not None and current.leaf_id == run.tip and not run.closing:
                self.workspace.offer_restore()  # the person is on its branch: its files offered
        elif current is not None and run.writer.session is current and current.leaf_id == run.tip and not run.closing:
            previous, self.s.resting = self.s.resting, run
            run.writer.follow_leaf()
            run.id = None
            if previous is not None and previous is not run:
                previous.unsubscribe()
        else:
            run.unsubscribe()
        if current is not None:
            try:
                await current.settle()  # the person's leaf back where a file keeps it (JSONL), after a run wrote elsewhere
            except (StorageError, OSError):
                pass  # the next write says what is wrong with the store
        self.s.emit(RunsChanged())
        self.s.emit(StatusChanged())

    async def prompt(self, text: str, *, attach: Sequence[str] = ()) -> AssistantMessage | None:
        await self.wait_mcp()
        await self.send(text, attach=attach, expand=True)
        await self.wait_idle()
        agent = self.s.agent
        messages = agent.state.messages if agent is not None else []
        return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)

    async def wait_mcp(self) -> None:
        """MCP servers still starting are waited for (print mode), `mcp_startup_wait` at most; one
        slower than that is said once and joins the run when it is ready."""
        late = await self.extras.mcp.wait_started(self.s.settings.mcp_startup_wait)
        if late:
            self.s.emit(Notice(f"MCP server{'s' if len(late) > 1 else ''} {', '.join(late)} still starting after "
                               f"{self.s.settings.mcp_startup_wait:g} s: this prompt goes without "
                               f"{'their' if len(late) > 1 else 'its'} tools for now (mcp_startup_wait in "
                               "config.toml waits longer).", "warning"))

    async def wait_idle(self) -> None:
        """Until no run goes, on any branch."""
        while tasks := [r.task for r in self.s.runs.values() if r.task is not None and not r.task.done()]:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.s.bus.flush()

    async def stop(self) -> None:
        if self.s.preview_id is not None:
            await self.shown.preview(None)
            return
        await self.stop_run()

    async def stop_run(self) -> None:
        """Stop the run of the branch on screen; what it had queued goes out next, on its branch."""
        run = self.s.run_here()
        if run is None or not run.going:
            return
        run.stopping = True
        try:
            batch, after = await run.agent.interrupt()
            if run.task is not None:
                await asyncio.gather(run.task, return_exceptions=True)
        finally:
            run.stopping = False
        if after:
            await run.agent.requeue_follow_ups(after)  # delivered when the batch's run would stop
        if batch:
            self._go(run, self._prompting(run, batch), new=False)
        else:
            await self._ended(run)

    async def halt(self) -> None:
        """Every run stopped, its queue kept for the next prompt (Pi's RPC drives one run)."""
        runs = list(self.s.runs.values())
        for run in runs:
            run.halted = True
        for run in runs:
            await run.agent.abort()
        await self.wait_idle()

    def abort(self) -> None:
        for run in self.s.every_run():
            run.agent.abort_now()

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
        """Stop every run (each reply is saved as aborted) and let every agent go (a session is
        left); the queued texts come back, the branch on screen's first."""
        queued: list[str] = []
        on_screen = self.s.on_screen()
        runs = self.s.every_run()
        runs.sort(key=lambda r: r is not on_screen)
        for run in runs:
            run.closing = True
            q = run.agent.queue_update()
            queued += [*q.steering, *q.follow_up]
            await run.agent.clear_queue()
            if run.agent.is_streaming:
                await run.agent.abort()
        await self.wait_idle()
        for run in runs:
            run.unsubscribe()
        self.s.resting = None
        self.s.runs.clear()
        return queued
