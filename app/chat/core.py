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
from typing import TYPE_CHECKING, Any, Literal, assert_never

from treechat.agent.tools import ApproveChange, FileRecorder, ProposedChange, Reach, ReadConfirm, make_tools
from treechat.attachments import AttachmentError, expand_prompt
from treechat.chat.agent_events import CHANGES_STATUS, translate
from treechat.chat.bus import ChatBus
from treechat.chat.drafts import Drafts
from treechat.chat.events import (
    Change,
    ChatEvent,
    CompactionEnded,
    EntryAppended,
    Failed,
    Header,
    HeaderChanged,
    LabelChanged,
    Mark,
    Notice,
    PathChanged,
    QueueChanged,
    SessionOpened,
    Status,
    StatusChanged,
)
from treechat.chat.extras import ChatExtras
from treechat.chat.models import ChatError, ChatModels
from treechat.chat.status import build_status, first_prompt, sibling_marks, viewing_text
from treechat.chat.tree import ChatTree
from treechat.config import Settings
from treechat.llm.options import stream_options_from_settings
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import StreamFn, StreamOptionFields
from treechat.load_warning import load_warning
from treechat.local_models import LocalModels
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.events import Appended, CompactionEnd, LeafMoved, SessionChange, SessionEvent
from treechat.session.instructions import stored_instructions
from treechat.session.session import Session
from treechat.session.system_prompt import SystemPromptBuilder, bind_system_prompt
from treechat.shown_path import ShownPath, prompts, shown_path
from treechat.storage.aggregates import advance_path_state, tree_row
from treechat.storage.base import PathState, SessionCatalog, SessionStorage, StorageError
from treechat.storage.model import Entry, ImageContent, LabelEntry, MessageEntry, SessionInfoEntry
from treechat.storage.tree_index import TreeIndex

if TYPE_CHECKING:
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
        self._builtins: list[Any] = []
        self._init_extras()  # MCP servers, skills, prompt templates (chat_extras.py)

    # ------------------------------------------------------------ events

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

    async def open(self, storage: SessionStorage, *, composer_text: str | None = None,
                   editor_text: str | None = None) -> None:
        """Make `storage` the current session. What was typed in the composer (`composer_text`)
        and anything still queued become the previous session's draft; `editor_text` (e.g. a
        prompt to edit after `fork before`) goes to the composer after this session's own draft."""
        previous = self._session
        if previous is not None:
            await self._leave(previous, composer_text if previous.session_id != storage.session_id else None)
        session = await Session.open(storage)
        self._session = session
        self._files = None
        self._stop_observing = session.changes.subscribe(self._on_session_change)
        self.preview_id, self.leaf_history, self.abandoned_leaf = None, [], None
        loading = await self._open_tree(storage, session.leaf_id)
        self._name, self._first_prompt = await storage.get_session_name(), None
        await self._load_state()
        if not self._system_given:
            stored = await stored_instructions(storage, self.tree.path_ids(session.leaf_id))
            self.prompt_builder.instructions = stored if isinstance(stored, str) else None  # cleared or never set
        path = await self._path_to_show()
        draft = self.drafts.take(storage.session_id)
        text = "\n\n".join(t for t in (draft, editor_text) if t) or None
        history = await prompts(storage, self.tree, path)
        marks, labels = self._path_marks(path)
        self._emit(SessionOpened(session_id=storage.session_id, tree=self.tree, leaf_id=session.leaf_id, path=path,
                                 header=self.header(), status=self.status(), composer_text=text,
                                 history=tuple(history), tree_loading=loading, marks=marks, labels=labels))
        self._emit(self.readiness())
        self.local.probe(self.current_model())  # its window, asked in the background from now on
        warning = load_warning(storage)
        if warning:
            self._emit(Notice(warning, "warning"))

    async def _leave(self, session: Session, composer_text: str | None) -> None:
        self._stop_tree_load()
        queued = await self._end_agent()
        self.drafts.save(session.session_id, [*queued, composer_text or ""])
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        await self.drop_if_empty(session.session_id)

    async def _end_agent(self) -> list[str]:
        """Stop a running reply (it is saved as aborted); the queued texts come back."""
        queued: list[str] = []
        if self._agent is not None:
            q = self._agent.queue_update()
            queued = [*q.steering, *q.follow_up]
            await self._agent.clear_queue()
            if self._agent.is_streaming:
                await self._agent.abort()
            if self._unsubscribe_agent is not None:
                self._unsubscribe_agent()
            self._agent = None
        if self._run_task is not None:
            await asyncio.gather(self._run_task, return_exceptions=True)
            self._run_task = None
        return queued

    async def new_session(self, *, composer_text: str | None = None) -> None:
        await self.open(await self.catalog.create(cwd=self.cwd), composer_text=composer_text)

    async def resume(self, session_ref: str, *, composer_text: str | None = None) -> None:
        await self.open(await self.catalog.open(session_ref), composer_text=composer_text)

    async def drop_if_empty(self, session_id: str) -> None:
        """A session nobody wrote to is not worth a row in the list."""
        try:
            storage = await self.catalog.open(session_id)
            if (await storage.get_session_stats()).entry_count == 0:
                await self.catalog.delete(session_id)
        except (StorageError, OSError):  # best effort: never block switching or quitting on cleanup
            pass

    async def close(self, *, composer_text: str | None = None) -> None:
        """Quit: a running reply is stopped (and saved); typed and queued text becomes the draft."""
        if self._session is not None:
            await self._leave(self._session, composer_text)
            self._session = None
        self.local.close()
        await self.mcp.close()

    # ------------------------------------------------------------ the model

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

    async def _file_recorder(self) -> FileRecorder | None:
        """Where edit, write and bash record what they change (`ChatWorkspace`)."""
        return None

    async def _approve(self, change: ProposedChange) -> bool | str:
        return False

    # ------------------------------------------------------------ sending and the queue

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

    def _start(self, prompt: str | list[Any], images: Sequence[ImageContent] = ()) -> None:
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

    async def prompt(self, text: str, *, attach: Sequence[str] = ()) -> Any:
        """Send and wait for the whole run (print mode); returns the run's last assistant message.
        Templates and `/skill` are expanded; MCP servers still starting are waited for (each
        within its startup timeout), so their tools are in the first request."""
        await self.mcp.wait_started()
        await self.send(text, attach=attach, expand=True)
        await self.wait_idle()
        agent = self._agent
        messages = agent.state.messages if agent is not None else []
        return next((m for m in reversed(messages) if getattr(m, "role", None) == "assistant"), None)

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

    # ------------------------------------------------------------ what happened (observers)

    def _on_session_change(self, change: SessionChange) -> None:
        match change:
            case Appended():
                self._on_append(change.entry)
            case LeafMoved():
                self._on_leaf(change.leaf_id)
            case _:
                assert_never(change)

    def _on_append(self, entry: Entry) -> None:
        row = tree_row(entry)
        self._grow_tree(row)
        if self._files is not None:
            self._files.add_entry(entry)
        if self._state_leaf == entry.parent_id:
            self._state = advance_path_state(self._state, entry)
            self._state_leaf = entry.id
        else:  # appended elsewhere than at our state (a branch summary after a move): re-read soon
            self._state_leaf = None
            asyncio.get_running_loop().create_task(self._refresh_state())
        self._emit(EntryAppended(entry=entry, row=row, leaf_id=self.session.leaf_id, shown=self.preview_id is None,
                                 siblings=self._siblings(entry.id)))
        header_changed = False
        if isinstance(entry, LabelEntry):
            self._emit(LabelChanged(entry.target_id, entry.label, self._relabel_tree(entry.target_id, entry.label)))
        elif isinstance(entry, SessionInfoEntry):
            self._name = entry.name or None
            header_changed = True
        elif self._first_prompt is None and isinstance(entry, MessageEntry) and entry.message.role == "user":
            header_changed = True
        if header_changed or isinstance(entry, (MessageEntry,)) or entry.type in ("compaction", "branch_summary"):
            self._emit(HeaderChanged())
        self._emit(StatusChanged())

    def _on_leaf(self, leaf_id: str | None) -> None:
        if self._state_leaf != leaf_id:
            self._state_leaf = None  # the controller re-reads the state after its own moves

    async def _refresh_state(self) -> None:
        await self._load_state()
        self._emit(StatusChanged())

    async def _load_state(self) -> None:
        leaf = self.session.leaf_id
        self._state = await self.session.storage.get_path_state(leaf)
        self._state_leaf = leaf

    async def _on_agent_event(self, event: SessionEvent) -> None:
        if isinstance(event, CompactionEnd):
            await self._compaction_ended(event)
            return
        for chat_event in translate(event, previewing=self.preview_id is not None):
            self._emit(chat_event)
        if event.type in CHANGES_STATUS:
            self._emit(StatusChanged())

    async def _compaction_ended(self, event: CompactionEnd) -> None:
        result = event.result
        if result is None:
            self._emit(CompactionEnded(event.reason, error=event.error))
            return
        self._emit(CompactionEnded(event.reason, tokens_before=result.tokens_before, tokens_after=result.tokens_after))
        # Read inside the agent's listener chain: nothing is appended until the path is read.
        self._emit(await self._path_changed("compaction"))
        self._emit(StatusChanged())

    async def preview(self, entry_id: str | None) -> None:
        """Show another branch in the transcript without moving the leaf (None: back to the leaf)."""
        self.preview_id = entry_id if entry_id != self.session.leaf_id else None
        self._emit(await self._path_changed("preview"))
        self._emit(HeaderChanged())

    # ------------------------------------------------------------ the view's data

    async def _path_to_show(self) -> ShownPath:
        return await shown_path(self.session.storage, self.tree, self.preview_id or self.session.leaf_id)

    async def _path_changed(self, cause: Literal["move", "preview", "compaction"]) -> PathChanged:
        path = await self._path_to_show()
        marks, labels = self._path_marks(path)
        return PathChanged(path, self.session.leaf_id, self.preview_id, cause, marks, labels)

    def _path_marks(self, path: ShownPath) -> tuple[tuple[Mark, ...], tuple[tuple[str, str], ...]]:
        """The `‹ n/m ›` marks and labels of a path's newest entries, as they are now."""
        ids = [e.id for e in path]
        labels = self.tree.labels
        return tuple(sibling_marks(ids, self.tree)), tuple((i, text) for i in ids if (text := labels.get(i)))

    def _siblings(self, entry_id: str) -> tuple[int, int] | None:
        sibs = self.tree.siblings(entry_id)
        return (sibs.index(entry_id) + 1, len(sibs)) if len(sibs) > 1 and entry_id in sibs else None

    def header(self) -> Header:
        leaf = self.session.leaf_id
        depth = self._state.depth if self._state_leaf == leaf else len(self.tree.path_ids(leaf))
        branches = max(self.tree.branch_count(), 1 if len(self.tree) else 0) if self._tree_load is None else -1
        return Header(title=self.title(), depth=depth, branches=branches,
                      viewing=viewing_text(self.tree, self.preview_id))

    def title(self) -> str:
        """The session's name, else its first prompt, else its id."""
        if self._name:
            return self._name
        if self._first_prompt is None:
            self._first_prompt = first_prompt(self.tree, self.session.leaf_id)
        return self._first_prompt[:60] if self._first_prompt else f"new session {self.session_id[:8]}"

    def status(self) -> Status:
        return build_status(self._state, self._agent, self.current_model(), self.registry)
