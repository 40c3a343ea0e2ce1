"""The controller: the one thing a front end talks to, and the one owner of a chat's state.

`Chat` holds the current `Session` (the tree and its leaf) and, once something needs a model,
its `AgentSession`. Front ends call its methods (send, steer, stop, move, fork, compact, …) and
subscribe to what it tells (`treechat.chat.events`: one `ChatDelta` per turn of the event loop,
and the discrete events); they never reach into the agent or the storage themselves. It imports
no Textual, so the TUI and print mode share every rule.

`Chat` is a façade: the work is done by role objects with one job each, which share one
`ChatState` (state.py) and its bus, and call each other's public methods only:

| role | module | its job |
|---|---|---|
| `Sessions` | sessions.py | open, new, resume, close, delete, list (drafts of what was typed and queued) |
| `Live` | live.py | other writers: the store's change feed, their entries folded in |
| `ChatTree` | tree.py | the tree index; a big session's whole tree read after the first frame |
| `Shown` | shown.py | the path shown (or previewed), its marks and labels, the header, the status |
| `Observer` | observe.py | the session's appends and the agent's events, as state and changes |
| `Navigation` | navigation.py | choose, move (back-history), switch siblings, jump to a search hit, entries by id |
| `Runs` | runs.py | the agent on first need; send, steer, follow-up, stop, the queue, the run task |
| `Models` | models.py | which model the next message goes to, readiness, local servers |
| `ModelSettings` | settings.py | set the model, the thinking level, the tools, the instructions |
| `Commands` | commands.py | fork, rename, label, compact, summarize, retry, export, copy, info |
| `Workspace` | workspace.py | file history, restores, the offer after a move |
| `Extras` | extras.py | MCP servers, skills, prompt templates |

Errors a person can act on are `ChatError`s with one sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from treechat.chat.commands import Commands
from treechat.chat.extras import Extras
from treechat.chat.live import Live
from treechat.chat.models import ChatError, Models
from treechat.chat.navigation import Navigation
from treechat.chat.observe import Observer
from treechat.chat.runs import Runs
from treechat.chat.sessions import Sessions
from treechat.chat.settings import ModelSettings
from treechat.chat.shown import Shown
from treechat.chat.state import ChatState, Confirm
from treechat.chat.tree import ChatTree
from treechat.chat.workspace import Workspace

if TYPE_CHECKING:
    from collections.abc import Callable

    from treechat.agent.tools import ApproveChange, CommandHost, FileHost, ReadConfirm
    from treechat.chat.bus import ChatBus, Listener
    from treechat.chat.drafts import Drafts
    from treechat.chat.events import QueueChanged
    from treechat.config.settings import Settings
    from treechat.llm.detect import DetectedServer
    from treechat.llm.registry import ModelRegistry
    from treechat.llm.types import StreamFn, StreamOptionFields
    from treechat.local_models import LocalModels
    from treechat.mcp.config import ProjectServers
    from treechat.mcp.manager import McpManager
    from treechat.mcp.tools import ConfirmCall
    from treechat.prompts.extensions import Extensions
    from treechat.session.agent_session import AgentSession
    from treechat.session.session import Session
    from treechat.session.system_prompt import SystemPromptBuilder
    from treechat.storage.base import SessionCatalog
    from treechat.storage.tree.index import TreeIndex

__all__ = ["Chat", "ChatError"]


class Chat:
    def __init__(self, *, catalog: SessionCatalog, settings: Settings, registry: ModelRegistry,
                 model_ref: str | None = None, tools: Sequence[str] | None = None, cwd: str | None = None,
                 stream_fn: StreamFn | None = None, stream_options: StreamOptionFields | None = None,
                 confirm: Confirm | None = None, system: str | None = None,
                 local_servers: Sequence[tuple[str, str]] | None = None,
                 confirm_read: ReadConfirm | None = None) -> None:
        s = self.s = ChatState(catalog=catalog, settings=settings, registry=registry, model_ref=model_ref, tools=tools,
                               cwd=cwd, stream_fn=stream_fn, stream_options=stream_options, confirm=confirm,
                               system=system, confirm_read=confirm_read, status=lambda: shown.status(),
                               header=lambda: shown.header())
        # the roles, each handed the state and the roles it calls (none calls one made after it)
        models = self.models = Models(s, local_servers=local_servers)
        extras = self.extras = Extras(s)
        trees = self.trees = ChatTree(s)
        workspace = self.workspace = Workspace(s)
        shown = self.shown = Shown(s, models=models, extras=extras)
        observer = Observer(s, shown=shown, trees=trees)
        runs = self.runs = Runs(s, models=models, extras=extras, observer=observer, shown=shown, workspace=workspace)
        sessions = self.sessions = Sessions(s, models=models, extras=extras, observer=observer, runs=runs, shown=shown,
                                            trees=trees, workspace=workspace)
        self.live = Live(s, shown=shown, trees=trees)
        navigation = self.navigation = Navigation(s, observer=observer, sessions=sessions, shown=shown, trees=trees,
                                                  workspace=workspace)
        self.model_settings = ModelSettings(s, extras=extras, models=models, shown=shown, runs=runs)
        self.commands = Commands(s, navigation=navigation, runs=runs, sessions=sessions, shown=shown,
                                 workspace=workspace)
        # what front ends call, by role (bound here: one line each, typed by the role's signature)
        self.open, self.new_session, self.resume = sessions.open, sessions.new_session, sessions.resume
        self.close = sessions.close
        self.delete_session = sessions.delete_session
        self.list_sessions = sessions.list_sessions
        self.drop_if_empty = sessions.drop_if_empty
        self.follow_store, self.poll_others = self.live.follow_store, self.live.poll_others
        self.load_tree, self.whole_tree = trees.load_tree, trees.whole_tree
        self.preview, self.header, self.title, self.status = shown.preview, shown.header, shown.title, shown.status
        self.choose, self.move_to, self.back = navigation.choose, navigation.move_to, navigation.back
        self.switch_sibling = navigation.switch_sibling
        self.jump_to = navigation.jump_to
        self.entries = navigation.entries
        self.originals_of, self.compacted_away = navigation.originals_of, navigation.compacted_away
        self.entry_details = navigation.entry_details
        self.ensure_agent = runs.ensure_agent
        self.send = runs.send
        self.asks_before_sending = runs.asks_before_sending
        self.prompt = runs.prompt
        self.wait_idle = runs.wait_idle
        self.stop, self.stop_run, self.abort, self.halt = runs.stop, runs.stop_run, runs.abort, runs.halt
        self.watch_agents = runs.watch_agents
        self.pull_last_queued, self.drop_queued = runs.pull_last_queued, runs.drop_queued
        self.resolve_model = models.resolve_model
        self.current_model = models.current_model
        self.readiness = models.readiness
        self.add_local_servers, self.busy_server = models.add_local_servers, models.busy_server
        self.window_learned = models.window_learned
        ms = self.model_settings
        self.set_model, self.set_thinking, self.set_instructions = ms.set_model, ms.set_thinking, ms.set_instructions
        self.system_prompt = ms.system_prompt
        self.tools, self.set_tool, self.set_tools = ms.tools, ms.set_tool, ms.set_tools
        c = self.commands
        self.rename, self.label, self.label_of, self.fork = c.rename, c.label, c.label_of, c.fork
        self.copy_text, self.retry, self.compact, self.summarize = c.copy_text, c.retry, c.compact, c.summarize
        self.export, self.info = c.export, c.info
        self.file_history = workspace.file_history
        self.restore_plan = workspace.restore_plan
        self.restore = workspace.restore
        self.undo_restore = workspace.undo_restore
        self.offer_restore = workspace.offer_restore
        self.journal = workspace.journal
        self.project_mcp = extras.project_mcp
        self.trust_project = extras.trust_project
        self.describe_project_mcp = extras.describe_project_mcp
        self.start_mcp = extras.start_mcp
        self.allow_project_mcp, self.restart_mcp, self.mcp_text = (extras.allow_project_mcp, extras.restart_mcp,
                                                                   extras.mcp_text)
        self.load_extensions = extras.load_extensions
        self.expand = extras.expand
        self.command_rows = extras.command_rows
        self.extensions_text = extras.extensions_text

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.s.bus.subscribe(listener)

    # ------------------------------------------------------------ what is current (read from the state)

    @property
    def bus(self) -> ChatBus:
        return self.s.bus

    @property
    def session(self) -> Session:
        return self.s.session

    @property
    def session_id(self) -> str:
        return self.s.session.session_id

    @property
    def leaf_id(self) -> str | None:
        return self.s.session.leaf_id

    @property
    def agent(self) -> AgentSession | None:
        """The agent bound to this session, once a message or a setting needed one."""
        return self.s.agent

    @property
    def is_running(self) -> bool:
        return self.s.is_running

    @property
    def is_busy(self) -> bool:
        """A reply is running or messages wait in the queue (quitting should ask first)."""
        return self.s.is_running or (self.s.agent is not None and self.s.agent.has_queued_messages)

    @property
    def queue(self) -> QueueChanged:
        return self.s.queue

    @property
    def read_only(self) -> str | None:
        return self.s.read_only

    @property
    def tree(self) -> TreeIndex:
        return self.s.tree

    @property
    def preview_id(self) -> str | None:
        return self.s.preview_id

    @property
    def leaf_history(self) -> list[str | None]:
        return self.s.leaf_history

    @property
    def abandoned_leaf(self) -> str | None:
        return self.s.abandoned_leaf

    @property
    def catalog(self) -> SessionCatalog:
        return self.s.catalog

    @property
    def settings(self) -> Settings:
        return self.s.settings

    @property
    def registry(self) -> ModelRegistry:
        return self.s.registry

    @property
    def cwd(self) -> str:
        return self.s.cwd

    @property
    def drafts(self) -> Drafts:
        return self.s.drafts

    @property
    def prompt_builder(self) -> SystemPromptBuilder:
        return self.s.prompt_builder

    @property
    def local(self) -> LocalModels:
        return self.models.local

    @property
    def detected(self) -> list[DetectedServer]:
        return self.models.detected

    @property
    def mcp(self) -> McpManager:
        return self.extras.mcp

    @property
    def project(self) -> ProjectServers | None:
        return self.extras.project

    @property
    def extensions(self) -> Extensions:
        return self.extras.extensions

    @property
    def folder(self) -> str:
        return self.workspace.folder

    # ------------------------------------------------------------ what a front end sets

    @property
    def model_ref(self) -> str | None:
        return self.s.model_ref

    @model_ref.setter
    def model_ref(self, ref: str | None) -> None:
        self.s.model_ref = ref

    @property
    def confirm(self) -> Confirm | None:
        """Asks before the bash tool runs a command (None: refuse)."""
        return self.s.confirm

    @confirm.setter
    def confirm(self, ask: Confirm | None) -> None:
        self.s.confirm = ask

    @property
    def confirm_read(self) -> ReadConfirm | None:
        """Asks before read, ls, grep look outside the working folder."""
        return self.s.confirm_read

    @confirm_read.setter
    def confirm_read(self, ask: ReadConfirm | None) -> None:
        self.s.confirm_read = ask

    @property
    def approve_change(self) -> ApproveChange | None:
        """Asks before edit/write change a file (None: refuse)."""
        return self.s.approve_change

    @approve_change.setter
    def approve_change(self, ask: ApproveChange | None) -> None:
        self.s.approve_change = ask

    @property
    def confirm_tool(self) -> ConfirmCall | None:
        """Asks before an MCP tool runs (None: refuse untrusted calls)."""
        return self.extras.confirm_tool

    @confirm_tool.setter
    def confirm_tool(self, ask: ConfirmCall | None) -> None:
        self.extras.confirm_tool = ask

    @property
    def file_host(self) -> FileHost | None:
        """An editor that serves the files read, edit and write use (None: this machine's)."""
        return self.s.file_host

    @file_host.setter
    def file_host(self, host: FileHost | None) -> None:
        self.s.file_host = host

    @property
    def command_host(self) -> CommandHost | None:
        """An editor whose terminal runs bash's commands (None: here, in a child process)."""
        return self.s.command_host

    @command_host.setter
    def command_host(self, host: CommandHost | None) -> None:
        self.s.command_host = host

    @property
    def builtin_commands(self) -> frozenset[str]:
        """The front end's own slash commands: no prompt template is found under their names."""
        return self.extras.builtin_commands

    @builtin_commands.setter
    def builtin_commands(self, names: frozenset[str]) -> None:
        self.extras.builtin_commands = names
