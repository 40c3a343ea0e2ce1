"""The controller's core: the state of a chat and how it changes (see `treechat.chat.Chat`).

A `Chat` holds the current `Session` (the tree and its leaf) and, once something needs a model,
its `AgentSession`. Front ends call its methods (send, steer, stop, move, fork, compact, …) and
subscribe to its typed events (`treechat.chat.events`); they never reach into the agent or the
storage themselves. It imports no Textual: the TUI and print mode share every rule here.

Errors a person can act on are `ChatError`s with one sentence. Long work (a run, a compaction)
runs in a task the controller owns; `wait_idle()` waits for it, `close()` ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.agent.tools import ApproveChange, FileRecorder, ProposedChange, ReadConfirm
from treechat.chat.bus import ChatBus
from treechat.chat.drafts import Drafts
from treechat.chat.events import (
    Change,
    ChatEvent,
    Header,
    QueueChanged,
)
from treechat.chat.extras import ChatExtras
from treechat.chat.models import ChatError, ChatModels
from treechat.chat.tree import ChatTree
from treechat.config import Settings
from treechat.llm.options import stream_options_from_settings
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import StreamFn, StreamOptionFields
from treechat.local_models import LocalModels
from treechat.session.agent_session import AgentSession
from treechat.session.session import Session
from treechat.session.system_prompt import SystemPromptBuilder
from treechat.storage.base import PathState, SessionCatalog
from treechat.storage.tree_index import TreeIndex

if TYPE_CHECKING:
    from treechat.agent.tools.base import AnyTool
    from treechat.workspace.history import FileHistory

Listener = Callable[[ChatEvent], None]
Confirm = Callable[[str], Awaitable[bool]]
SendKind = Literal["send", "steer", "follow_up"]


class ChatCore(ChatModels, ChatExtras, ChatTree):
    """State, events, sessions, the model, sending and the queue (`Chat` adds the commands)."""

    def __init__(self, *, catalog: SessionCatalog, settings: Settings, registry: ModelRegistry,
                 model_ref: str | None = None, tools: Sequence[str] | None = None, cwd: str | None = None,
                 stream_fn: StreamFn | None = None, stream_options: StreamOptionFields | None = None,
                 confirm: Confirm | None = None, system: str | None = None,
                 local_servers: Sequence[tuple[str, str]] | None = None,
                 confirm_read: ReadConfirm | None = None) -> None:
        self.catalog, self.settings, self.registry = catalog, settings, registry
        self.model_ref = model_ref or settings.model
        self.tool_names = list(tools if tools is not None else settings.tools)
        self.cwd = cwd or str(Path.cwd())
        # the bounded waits of config.toml, unless the caller (a test, a bench) gives its own
        self.stream_fn = stream_fn
        self.stream_options: StreamOptionFields = {**stream_options_from_settings(settings), **(stream_options or {})}
        self.confirm = confirm  # asks before the bash tool runs a command (None: refuse)
        self.approve_change: ApproveChange | None = None  # asks before edit/write change a file (None: refuse)
        self._files: FileHistory | None = None  # the session's checkpoints, once something needed them
        self.confirm_read = confirm_read  # asks before read, ls, grep look outside the working folder
        # the system prompt: treechat's own, the tools, folder, date, AGENTS.md, the user's words
        self.prompt_builder = SystemPromptBuilder.from_settings(settings, cwd=self.cwd, instructions=system)
        self._system_given = system is not None  # --system wins over what a session stored (/system)
        self._refresh_prompt: Callable[[], str] | None = None
        self.drafts = Drafts(Path(settings.home) / "drafts")
        # local servers and what they say about their models (None: the usual ports and config.toml's)
        self.local = LocalModels(registry, settings, servers=local_servers, on_refined=self._server_answered)
        # what changed, told once per turn of the event loop (chat/bus.py)
        self.bus = ChatBus(lambda: self.status() if self._session else None,
                           lambda: self.header() if self._session else None)
        self._session: Session | None = None
        self._agent: AgentSession | None = None
        self._stop_observing: Callable[[], None] | None = None
        self._unsubscribe_agent: Callable[[], None] | None = None
        self._run_task: asyncio.Task[None] | None = None
        self.tree = TreeIndex()
        self.preview_id: str | None = None
        self.leaf_history: list[str | None] = []
        self.abandoned_leaf: str | None = None
        self._state = PathState()
        self._state_leaf: str | None = None  # the leaf `_state` is for
        self._name: str | None = None
        self._first_prompt: str | None = None
        self._builtins: list[AnyTool] = []
        self._init_extras()  # MCP servers, skills, prompt templates (chat_extras.py)

    # ------------------------------------------------------------ events

    def header(self) -> Header:
        raise NotImplementedError  # ChatShown's (shown.py)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.bus.subscribe(listener)

    def _emit(self, event: ChatEvent | Change) -> None:
        self.bus.emit(event)

    # ------------------------------------------------------------ what is current

    @property
    def session(self) -> Session:
        if self._session is None:
            raise ChatError("No session is open.")
        return self._session

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def leaf_id(self) -> str | None:
        return self.session.leaf_id

    @property
    def agent(self) -> AgentSession | None:
        """The agent bound to this session, once a message or a setting needed one."""
        return self._agent

    @property
    def is_running(self) -> bool:
        """A run is under way: the agent streams, or a run was started and has not ended (a message
        sent in the same burst as the one before it must queue, not start a second run)."""
        running_task = self._run_task is not None and not self._run_task.done()
        return running_task or (self._agent is not None and self._agent.is_streaming)

    @property
    def is_busy(self) -> bool:
        """A reply is running or messages wait in the queue (quitting should ask first)."""
        return self.is_running or (self._agent is not None and self._agent.has_queued_messages)

    @property
    def queue(self) -> QueueChanged:
        if self._agent is None:
            return QueueChanged((), ())
        q = self._agent.queue_update()
        return QueueChanged(tuple(q.steering), tuple(q.follow_up))

    # ------------------------------------------------------------ sessions








    # ------------------------------------------------------------ the model


    async def _file_recorder(self) -> FileRecorder | None:
        """Where edit, write and bash record what they change (`ChatWorkspace`)."""
        return None

    async def _approve(self, change: ProposedChange) -> bool | str:
        return False

    @property
    def read_only(self) -> str | None:
        """Why this store cannot be written (browsing and search still work), or None."""
        reason = getattr(self.catalog, "read_only", None)
        return reason if isinstance(reason, str) and reason else None

    # ------------------------------------------------------------ sending and the queue
