"""What the controller's roles share: one explicit state object, and the bus they tell changes on.

Every role (session switch, navigation, runs, model settings, commands, workspace, …) is handed this
object and the roles it uses; they read and write its fields (all public: this *is* the shared
state) and call each other's public methods only. What a field means is said once, here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.chat.bus import ChatBus
from treechat.chat.drafts import Drafts
from treechat.chat.errors import ChatError
from treechat.chat.events import Change, ChatEvent, Header, QueueChanged, Status
from treechat.chat.tool_set import ToolChoice
from treechat.llm.options import stream_options_from_settings
from treechat.prompts.outside import ReadsOutside
from treechat.session.system_prompt import SystemPromptBuilder
from treechat.storage.base import PathState
from treechat.storage.tree_index import TreeIndex

if TYPE_CHECKING:
    from treechat.agent.tools import ApproveChange, CommandHost, FileHost, ReadConfirm
    from treechat.agent.tools.base import AnyTool
    from treechat.chat.tree import TreeLoad
    from treechat.config.settings import Settings
    from treechat.llm.registry import ModelRegistry
    from treechat.llm.types import StreamFn, StreamOptionFields
    from treechat.mcp.tools import ConfirmCall
    from treechat.session.agent_session import AgentSession
    from treechat.session.session import Session
    from treechat.storage.base import SessionCatalog
    from treechat.storage.model import Usage
    from treechat.workspace.history import FileHistory

Confirm = Callable[[str], Awaitable[bool]]
SendKind = Literal["send", "steer", "follow_up"]


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
        self.refresh_prompt: Callable[[], str] | None = None  # bound to the agent once there is one
        self.drafts = Drafts(Path(settings.home) / "drafts")
        # what changed, told once per turn of the event loop (chat/bus.py)
        self.bus = ChatBus(lambda: status() if self.current else None, lambda: header() if self.current else None)
        self.current: Session | None = None  # the open session
        self.agent: AgentSession | None = None  # its agent, from the first need
        self.builtins: list[AnyTool] = []  # every built-in tool, made with the agent (MCP's join them)
        self.run_task: asyncio.Task[None] | None = None  # the run the controller owns
        # the sub-agents running now (by their task call): what each spent so far, which the status
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
        self.first_prompt: str | None = None  # its first prompt (the title of an unnamed one), once looked up
        self.files: FileHistory | None = None  # the session's checkpoints, once something needed them

    def emit(self, event: ChatEvent | Change) -> None:
        self.bus.emit(event)

    def allowed_tools(self, mcp_tools: Sequence[AnyTool]) -> list[AnyTool]:
        """The tools the agent may carry now (the path's record narrows them: tool_set.py)."""
        return self.tool_choice.allowed([*self.builtins, *mcp_tools])

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
        """A run is under way: the agent streams, or a run was started and has not ended (a message
        sent in the same burst as the one before it must queue, not start a second run)."""
        running_task = self.run_task is not None and not self.run_task.done()
        return running_task or (self.agent is not None and self.agent.is_streaming)

    @property
    def queue(self) -> QueueChanged:
        if self.agent is None:
            return QueueChanged((), ())
        q = self.agent.queue_update()
        return QueueChanged(tuple(q.steering), tuple(q.follow_up))
