"""What the controller's roles share: one explicit state object, and the bus they tell changes on.

Every role (session switch, navigation, runs, model settings, commands, workspace, …) is handed this
object and the roles it uses; they read and write its fields (all public: this *is* the shared
state) and call each other's public methods only. What a field means is said once, here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.chat.bus import ChatBus
from treechat.chat.drafts import Drafts
from treechat.chat.errors import ChatError
from treechat.chat.events import Change, ChatEvent, Header, QueueChanged, RunTip, Status
from treechat.chat.tool_set import ToolChoice
from treechat.llm.options import stream_options_from_settings
from treechat.prompts.outside import ReadsOutside
from treechat.session.system_prompt import SystemPromptBuilder
from treechat.storage.base import PathState
from treechat.storage.tree.index import TreeIndex

if TYPE_CHECKING:
    from treechat.agent.tools import ApproveChange, CommandHost, FileHost, FileRecorder, ReadConfirm, SpawnChild
    from treechat.agent.tools.base import AnyTool
    from treechat.chat.tree import TreeLoad
    from treechat.config.settings import Settings
    from treechat.llm.registry import ModelRegistry
    from treechat.llm.types import StreamFn, StreamOptionFields
    from treechat.mcp.tools import ConfirmCall
    from treechat.session.agent_session import AgentSession
    from treechat.session.session import BranchWriter, Session
    from treechat.storage.base import SessionCatalog
    from treechat.storage.model import Usage
    from treechat.workspace.history import FileHistory
    from treechat.workspace.worktrees import Worktree

Confirm = Callable[[str], Awaitable[bool]]
SendKind = Literal["send", "steer", "follow_up"]


@dataclass(eq=False)
class Run:
    """An agent on a branch (issue 39): its AgentSession, which appends through its own writer,
    its built-in tools (their checkpoints go on its branch), its system prompt's refresh, and,
    while it runs, its id and task. At rest (no task) it is the agent at the person's leaf: the
    next message starts it there; a run that ends where the person is comes back to rest."""

    agent: AgentSession
    builtins: list[AnyTool]
    refresh_prompt: Callable[[], str]
    unsubscribe: Callable[[], None]
    id: str | None = None  # "r1", "r2", … while it runs (events name it); None at rest
    task: asyncio.Task[None] | None = None
    halted: bool = False  # `halt`: the stopped run's queue waits for the next prompt
    unsaved: bool = False  # a message of this run could not be saved
    stopping: bool = False  # Esc: its task ends and its queue goes on in a new one (not an end)
    # what is told of it (the tree's mark, the header, the status): from its start to its agent's
    # end (a queued message it delivers after starts it again), not to its task's last step
    live: bool = False
    closing: bool = False  # the session is being left: it does not come back to rest
    # its own git worktree (another run was changing files in the checkout when it started; issue
    # 39): its tools work there, its checkpoints name the checkout's files; None: the checkout
    worktree: Worktree | None = None
    changes_files: bool = False  # edit, write or bash were among its tools when it started

    @property
    def writer(self) -> BranchWriter:
        return self.agent.session

    @property
    def tip(self) -> str | None:
        return self.agent.session.tip

    @property
    def going(self) -> bool:
        """Its run is under way: the agent streams, or its task was started and has not ended (a
        message sent in the same burst as the one before it must queue, not start a second run)."""
        return (self.task is not None and not self.task.done()) or self.agent.is_streaming


class ChatState:
    def __init__(self, *, catalog: SessionCatalog, settings: Settings, registry: ModelRegistry,
                 model_ref: str | None, tools: Sequence[str] | None, cwd: str | None, stream_fn: StreamFn | None,
                 stream_options: StreamOptionFields | None, confirm: Confirm | None, system: str | None,
                 confirm_read: ReadConfirm | None, status: Callable[[], Status], header: Callable[[], Header]) -> None:
        self.catalog, self.settings, self.registry = catalog, settings, registry
        self.model_ref = model_ref or settings.model  # the model chosen (None: the path's, or a local server's)
        self.tool_names = list(tools if tools is not None else settings.tools)  # the default set
        self.tool_choice = ToolChoice(self.tool_names)  # and what /tools changed (chat/tool_set.py)
        self.cwd = cwd or str(Path.cwd())
        self.stream_fn = stream_fn
        # the bounded waits of config.toml, unless the caller (a test, a bench) gives its own
        self.stream_options: StreamOptionFields = {**stream_options_from_settings(settings), **(stream_options or {})}
        # what the front end answers with (None: refuse): bash's commands, edits and writes, reads
        # outside the working folder, MCP calls
        self.confirm = confirm
        self.approve_change: ApproveChange | None = None
        self.confirm_read = confirm_read
        self.confirm_tool: ConfirmCall | None = None
        # an editor that serves the tools' files and runs bash's commands (`treechat acp`; None: here)
        self.file_host: FileHost | None = None
        self.command_host: CommandHost | None = None
        # the system prompt: treechat's own, the tools, folder, date, AGENTS.md, the user's words
        self.prompt_builder = SystemPromptBuilder.from_settings(settings, cwd=self.cwd, instructions=system)
        # files read for the repository (AGENTS.md, templates, skills, attachments) outside the
        # working folder: asked with `confirm_read`, the answers kept for this chat
        self.outside = ReadsOutside.for_cwd(self.cwd, anywhere=settings.allow_reads_outside)
        self.prompt_builder.outside = self.outside
        self.system_given = system is not None  # --system wins over what a session stored (/system)
        self.drafts = Drafts(Path(settings.home) / "drafts")
        # what changed, told once per turn of the event loop (chat/bus.py)
        self.bus = ChatBus(lambda: status() if self.current else None, lambda: header() if self.current else None,
                           lambda: self.runs_told() if self.current else None)
        self.current: Session | None = None  # the open session
        # the agents on its branches: the one at rest at the leaf (from the first need), and the
        # runs going, by id (each on its own branch; at most settings.max_runs)
        self.resting: Run | None = None
        self.runs: dict[str, Run] = {}
        # adds until the call's result, which counts it, is on the path (chat/subagents.py)
        self.live_children: dict[str, Usage] = {}
        self.tree = TreeIndex()  # the session's tree (a big one's path until `tree_load` is done)
        self.tree_load: TreeLoad | None = None
        self.preview_id: str | None = None  # a branch shown without moving the leaf
        self.leaf_history: list[str | None] = []  # where the leaf was (Backspace in the tree goes back)
        self.abandoned_leaf: str | None = None  # the tip the last move left (/summarize)
        self.path_state = PathState()  # tokens, cost, model… of the path, kept as entries arrive
        self.state_leaf: str | None = None  # the leaf `path_state` is for (None: to be read again)
        self.name: str | None = None  # the session's name
        self.sub_agent_of: str | None = None  # a sub-agent's session: the session whose `task` call made it
        self.first_prompt: str | None = None  # its first prompt (the title of an unnamed one), once looked up
        self.files: FileHistory | None = None  # the session's checkpoints, once something needed them

    def emit(self, event: ChatEvent | Change) -> None:
        self.bus.emit(event)

    def built_in_tools(self, names: Sequence[str], cwd: str, *, approve: ApproveChange,
                       recorder: FileRecorder | None, spawn: SpawnChild | None = None) -> list[AnyTool]:
        """The built-in tools `names` working in `cwd`, with this chat's questions, reach, git
        paths, editor host and tool environment (a run's, or a sub-agent's in its worktree)."""
        from treechat.agent.tools import Reach, make_tools
        from treechat.config.tool_env import tool_environment

        settings = self.settings
        return make_tools(names, cwd=cwd, confirm=self.confirm,
                          reach=Reach.for_run(cwd, self.confirm_read, anywhere=settings.allow_reads_outside),
                          approve=approve, recorder=recorder, writable_git_paths=settings.writable_git_paths,
                          files=self.file_host, commands=self.command_host, env=tool_environment(settings),
                          spawn=spawn)

    def allowed_tools(self, builtins: Sequence[AnyTool], mcp_tools: Sequence[AnyTool]) -> list[AnyTool]:
        """The tools an agent may carry now (the path's record narrows them: tool_set.py)."""
        return self.tool_choice.allowed([*builtins, *mcp_tools])

    def run_here(self) -> Run | None:
        """The run of the branch on screen: the one whose tip is the leaf (the person is at its
        live end). Steer, follow-up and stop go to it; elsewhere a message starts a new run."""
        if self.current is None:
            return None
        leaf = self.current.leaf_id
        return next((r for r in self.runs.values() if r.tip == leaf and not r.writer.at_fork), None)

    def on_screen(self) -> Run | None:
        """The agent of the branch on screen: its run, else the one at rest at the leaf."""
        return self.run_here() or self.resting

    def every_run(self) -> list[Run]:
        """Every agent this chat holds: the one at rest, then the runs going."""
        return ([self.resting] if self.resting is not None else []) + list(self.runs.values())

    def runs_told(self) -> tuple[tuple[RunTip, ...], bool]:
        """What a delta tells of the runs: each one going with its tip, and whether one goes here."""
        live = [(i, r) for i, r in self.runs.items() if r.live]
        leaf = self.current.leaf_id if self.current is not None else None
        return tuple(RunTip(i, r.tip) for i, r in live), any(r.tip == leaf and not r.writer.at_fork for _, r in live)

    def offer_mcp_tools(self, mcp_tools: Sequence[AnyTool]) -> None:
        """An MCP server's tools came or went: every agent is offered the new set."""
        for run in self.every_run():
            run.agent.offer_tools(self.allowed_tools(run.builtins, mcp_tools))

    def refresh_prompt(self) -> str | None:
        """The system prompt of the agent on screen built again (today's date, AGENTS.md, the
        tools as they are now); None before there is an agent."""
        run = self.on_screen()
        return run.refresh_prompt() if run is not None else None

    @property
    def agent(self) -> AgentSession | None:
        """The agent of the branch on screen (`on_screen`), None before the first need."""
        run = self.on_screen()
        return run.agent if run is not None else None

    @property
    def session(self) -> Session:
        if self.current is None:
            raise ChatError("No session is open.")
        return self.current

    @property
    def read_only(self) -> str | None:
        """Why this store cannot be written (browsing and search still work), or None."""
        reason = self.catalog.read_only
        return reason if isinstance(reason, str) and reason else None

    @property
    def is_running(self) -> bool:
        """A run is under way, on any branch."""
        return any(r.going for r in self.runs.values())

    @property
    def is_running_here(self) -> bool:
        """A run is under way on the branch on screen (its tip is the leaf)."""
        run = self.run_here()
        return run is not None and run.going

    @property
    def queue(self) -> QueueChanged:
        if self.agent is None:
            return QueueChanged((), ())
        q = self.agent.queue_update()
        return QueueChanged(tuple(q.steering), tuple(q.follow_up))
