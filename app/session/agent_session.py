"""AgentSession: the agent bound to a session tree.

Every message_end is appended to the tree as it happens (the user message before the request
goes out, since listeners are awaited before the loop calls the provider); model, thinking-level
and tool changes become entries; moving the leaf rebuilds the agent's transcript from the path.

Listeners (`subscribe`) get every agent event, then the session's own (treechat.session.events:
queue, model, thinking level and tools changed, a message that could not be saved, the
transcript rebuilt, compactions), on one EventBus with its contract: a listener must not raise;
one that does ends a running reply as an error. The run's stop signal is `agent.signal`.
Compaction, branch summaries and forks live in compactor.py and branching.py; the methods here
are their public face.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from treechat.agent.agent import Agent
from treechat.agent.bus import EventBus, Listener, Unsubscribe
from treechat.agent.events import AgentEnd, AgentEvent, AgentStart, MessageEnd, MessageStart
from treechat.agent.queues import QueueKind
from treechat.agent.state import AgentState
from treechat.agent.tools.base import AnyTool
from treechat.agent.types import AgentMessage, GetApiKey, ModelRegistry
from treechat.llm.types import THINKING_LEVELS, ModelInfo, StreamFn, StreamOptionFields, stored_model_ref
from treechat.storage.base import SessionCatalog, SessionStorage
from treechat.storage.model import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    UserMessage,
    message_text,
)

from .branching import NothingToSummarize, fork_session, write_branch_summary
from .compaction import CompactionError, CompactionSettings, NothingToCompact
from .compactor import CompactionFailed, Compactor, ContextUsage, context_usage, model_complete
from .events import (
    ActiveToolsChanged,
    CompactionEnd,
    CompactionResult,
    CompactionStart,
    ModelChanged,
    PersistFailed,
    QueueUpdate,
    SessionEvent,
    SessionReloaded,
    ThinkingLevelChanged,
)
from .recovery import save_unsaved
from .session import BranchWriter, Session

__all__ = ["AgentSession", "CompactionEnd", "CompactionError", "CompactionFailed", "CompactionResult",
           "CompactionSettings", "CompactionStart", "ContextUsage", "NothingToCompact", "NothingToSummarize"]


def clamp_thinking(model: ModelInfo, level: str) -> str:
    if level not in THINKING_LEVELS:
        raise ValueError(f"Thinking level must be one of {', '.join(THINKING_LEVELS)}, not {level!r}.")
    if not model.reasoning:
        return "off"
    if level == "xhigh" and not model.compat.supports_xhigh:
        return "high"
    return level


def _stopped_empty(message: AgentMessage) -> bool:
    """A reply that ended before it said anything because its run was stopped (or failed)."""
    return (isinstance(message, AssistantMessage) and message.stop_reason in ("aborted", "error")
            and not message_text(message).strip() and not any(b.type == "toolCall" for b in message.content))


class AgentSession:
    def __init__(self, session: Session | BranchWriter, agent: Agent, *, available_tools: Iterable[AnyTool] = (),
                 resolve_model: Callable[[str], ModelInfo] | None = None,
                 compaction_settings: CompactionSettings | None = None) -> None:
        # the writer it appends with: at the session's leaf until a run pins it to its own branch
        self.session: BranchWriter = session if isinstance(session, BranchWriter) else session.branch()
        self.agent = agent
        self.available_tools = {t.name: t for t in available_tools}
        self.resolve_model = resolve_model
        self.events: EventBus[SessionEvent] = EventBus()
        self.recovery_folders: list[Path] = []  # where unsaved messages go (save_unsaved adds /tmp)
        self.compactor = Compactor(self, compaction_settings or CompactionSettings(), self.events)
        self._path_tools: list[str] | None = None  # the tool set the path records at the leaf
        self._halted: str | None = None  # why this run was stopped: a message of it could not be saved
        self._unsaved: list[AgentMessage] = []  # this run's messages the session does not hold
        # tools on whatever the path recorded (the person turned them on: `/tools NAME on`)
        self.pinned_tools: frozenset[str] = frozenset()
        agent.subscribe(self._on_agent_event)

    # ------------------------------------------------------------ construction

    @classmethod
    async def create(
        cls,
        session: Session | BranchWriter,
        *,
        model: ModelInfo | str | None = None,
        registry: ModelRegistry | None = None,
        thinking_level: str | None = None,
        tools: Iterable[AnyTool] = (),
        active_tools: Iterable[str] | None = None,
        pinned_tools: Iterable[str] = (),
        system_prompt: str = "",
        stream_fn: StreamFn | None = None,
        compaction_settings: CompactionSettings | None = None,
        get_api_key: GetApiKey | None = None,
        stream_options: StreamOptionFields | None = None,
    ) -> AgentSession:
        """Bind an agent to `session` at its leaf (or to a writer at its tip: `Session.branch`).
        `model` (a ModelInfo or "provider/id") wins over
        the model stored on the path; `registry` resolves refs and supplies API keys (unless
        `get_api_key` is given); `stream_fn` defaults to the real providers. Writes the model,
        thinking-level and tool entries the path lacks. `tools` are those that may be on; the
        path's record narrows them, except `pinned_tools` (and MCP tools). Raises ValueError
        (one sentence) when no model can be chosen."""
        session = session if isinstance(session, BranchWriter) else session.branch()
        ctx = await session.build_session_context()
        resolve = registry.resolve if registry is not None else None
        if isinstance(model, str):
            if resolve is None:
                raise ValueError("A model reference needs a registry to resolve it.")
            model = resolve(model)
        stored_ref = stored_model_ref(ctx.model)
        if model is None and stored_ref and resolve is not None:
            model = resolve(stored_ref)
        if not isinstance(model, ModelInfo):
            raise ValueError("No model chosen: pass --model PROVIDER/ID or set `model` in config.toml.")
        tools = list(tools)
        pinned = frozenset(pinned_tools)
        chosen = ([t for t in tools if t.name in set(active_tools)] if active_tools is not None
                  else offered_on_path(tools, ctx.active_tool_names, pinned))
        state = AgentState(system_prompt=system_prompt, model=model, messages=ctx.messages,
                           tools=chosen,
                           thinking_level=clamp_thinking(model, thinking_level or ctx.thinking_level or "off"))
        if get_api_key is None and registry is not None:
            get_api_key = registry.api_key
        agent = Agent(state=state, stream_fn=stream_fn, get_api_key=get_api_key, session_id=session.session_id,
                      stream_options=stream_options)
        self = cls(session, agent, available_tools=tools, resolve_model=resolve,
                   compaction_settings=compaction_settings)
        self.pinned_tools = pinned
        # record the settings this run uses when they differ from what the path says
        stored = ctx.model or {}
        if (stored.get("provider"), stored.get("modelId")) != (model.provider, model.id):
            await session.append_model_change(model.provider, model.id)
        if not ctx.messages or state.thinking_level != ctx.thinking_level:
            await session.append_thinking_level_change(state.thinking_level)
        self._path_tools = ctx.active_tool_names
        await self.record_tools()
        return self

    # ------------------------------------------------------------ events

    def subscribe(self, listener: Listener[SessionEvent]) -> Unsubscribe:
        """Every agent event (after this session persisted what it carries), then the session's
        own. A listener must not raise: one that does ends a running reply as an error."""
        return self.events.subscribe(listener)

    async def _on_agent_event(self, event: AgentEvent) -> None:
        match event:
            case AgentStart():
                self._halted, self._unsaved = None, []
            case MessageEnd() if self._halted and _stopped_empty(event.message):
                self._unsaved.append(event.message)  # the request the halt kept from going out: nothing to keep
            case MessageEnd():
                await self._persist(event.message)
            case AgentEnd() if self._unsaved:
                # the next request's context is what the session holds (the rest is in the recovery file)
                unsaved = {id(m) for m in self._unsaved}
                self.agent.state.messages = [m for m in self.agent.state.messages if id(m) not in unsaved]
            case MessageStart() if event.message.role == "user":
                await self.events.emit(self.queue_update())  # a queued message was just delivered
            case _:
                pass
        await self.events.emit(event)
        await self.compactor.on_agent_event(event)

    async def _persist(self, message: AgentMessage) -> None:
        try:
            if message.role in ("user", "assistant", "toolResult"):
                await self.session.append_message(message)
            elif isinstance(message, CustomMessage):
                await self.session.append_custom_message(message.custom_type, message.content, message.display,
                                                         message.details)
            # bashExecution and summaries have their own entries, written by whoever creates them
        except Exception as err:  # noqa: BLE001  any write failure: the message must not be lost with it
            await self._keep_unsaved(message, err)

    async def _keep_unsaved(self, message: AgentMessage, err: Exception) -> None:
        reason = str(err) or type(err).__name__
        if isinstance(err, OSError) and err.strerror:
            reason = err.strerror + (f": {err.filename}" if err.filename else "")
        path = save_unsaved(message, self.session.session_id, reason, self.recovery_folders)
        # nothing more goes out (no request, no tool run) while what it says cannot be kept
        self._halted = reason
        self._unsaved.append(message)
        self.agent.abort()
        await self.events.emit(PersistFailed(message=message, reason=reason, recovery_path=path))

    # ------------------------------------------------------------ prompting and queues

    @property
    def state(self) -> AgentState:
        return self.agent.state

    @property
    def is_streaming(self) -> bool:
        return self.agent.state.is_streaming

    @property
    def is_compacting(self) -> bool:
        return self.compactor.is_compacting

    async def prompt(self, text: str | list[AgentMessage], images: Iterable[ImageContent] = (), *,
                     streaming_behavior: str | None = None) -> None:
        """Send a prompt; while a run is active, `streaming_behavior` ("steer" | "follow_up") queues it.
        Returns when the run is over, including an automatic compaction and the overflow retry
        after it; a prompt sent while a compaction runs starts once it is done."""
        if self.is_streaming:
            if isinstance(text, list):
                raise RuntimeError("Queued messages go out when the current run is over.")
            if streaming_behavior == "steer":
                return await self.steer(text, images)
            if streaming_behavior == "follow_up":
                return await self.follow_up(text, images)
            raise RuntimeError("Agent is already processing. Specify streaming_behavior ('steer' or 'follow_up') "
                               "to queue the message.")
        await self.compactor.wait_idle()
        self.compactor.new_prompt()
        await self.compactor.check_threshold(None)  # e.g. after switching to a smaller model
        await self.record_tools()
        await self.agent.prompt(text, images)
        await self.compactor.after_run()

    async def continue_(self) -> None:
        """Resume from the transcript (after an error, or to deliver queued messages), like prompt()."""
        await self.compactor.wait_idle()
        await self.record_tools()
        await self.agent.continue_()
        await self.compactor.after_run()

    async def steer(self, text: str | UserMessage, images: Iterable[ImageContent] = ()) -> None:
        """Queue `text` (or a message made already: `images` are then in it) for the next turn."""
        self.agent.steer(_user(text, images))
        await self.events.emit(self.queue_update())

    async def follow_up(self, text: str | UserMessage, images: Iterable[ImageContent] = ()) -> None:
        self.agent.follow_up(_user(text, images))
        await self.events.emit(self.queue_update())

    def queue_update(self) -> QueueUpdate:
        return QueueUpdate(steering=[message_text(m) for m in self.agent.steering_queue.items],
                           follow_up=[message_text(m) for m in self.agent.follow_up_queue.items])

    async def remove_queued(self, kind: QueueKind, index: int) -> str:
        queue = self.agent.steering_queue if kind == "steer" else self.agent.follow_up_queue
        text = message_text(queue.remove(index))
        await self.events.emit(self.queue_update())
        return text

    async def pop_last_queued(self) -> str | None:
        """Take the most recently queued message back (for editing in the composer)."""
        taken = self.agent.pop_last_queued()
        if taken is None:
            return None
        await self.events.emit(self.queue_update())
        return message_text(taken[1])

    @property
    def has_queued_messages(self) -> bool:
        return self.agent.has_queued_messages()

    async def interrupt(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """Esc: stop the run. Returns (what goes out next, the follow-ups to queue behind it): the
        queued steering and then the follow-ups, or when nothing steers, the follow-ups and
        nothing. The queue is emptied meanwhile, so the stopped run cannot deliver a follow-up
        ahead of a steer queued before it. The partial reply is kept as aborted."""
        steering = self.agent.clear_steering_queue()
        follow_ups = self.agent.clear_follow_up_queue()
        await self.abort()
        await self.events.emit(self.queue_update())
        return (steering, follow_ups) if steering else (follow_ups, [])

    async def requeue_follow_ups(self, messages: Iterable[AgentMessage]) -> None:
        """Put follow-ups taken by `interrupt` back in the queue, in their order."""
        for message in messages:
            self.agent.follow_up(message)
        await self.events.emit(self.queue_update())

    def abort_now(self) -> None:
        """Stop from a signal handler (Ctrl+C in print mode): no await, nothing delivered next."""
        self.compactor.abort()
        self.agent.abort()

    async def clear_queue(self) -> QueueUpdate:
        before = self.queue_update()
        self.agent.clear_all_queues()
        await self.events.emit(self.queue_update())
        return before

    async def abort(self) -> None:
        self.compactor.abort()
        self.agent.abort()
        await self.agent.wait_for_idle()

    # ------------------------------------------------------------ settings

    async def set_model(self, model: ModelInfo | str) -> None:
        if isinstance(model, str):
            if self.resolve_model is None:
                raise ValueError("A model reference needs a registry to resolve it.")
            model = self.resolve_model(model)
        self.agent.state.model = model
        await self.session.append_model_change(model.provider, model.id)
        await self.events.emit(ModelChanged(model=model))
        await self.set_thinking_level(self.agent.state.thinking_level)

    async def set_thinking_level(self, level: str) -> str:
        """Clamp to what the model supports; append an entry only when the level changes."""
        new = clamp_thinking(self.agent.state.model, level)
        ctx = await self.session.build_session_context()
        if new != ctx.thinking_level:
            await self.session.append_thinking_level_change(new)
        if new != self.agent.state.thinking_level or new != ctx.thinking_level:
            self.agent.state.thinking_level = new
            await self.events.emit(ThinkingLevelChanged(level=new))
        return new

    async def set_active_tools(self, names: Iterable[str]) -> list[str]:
        names = list(dict.fromkeys(names))
        missing = [n for n in names if n not in self.available_tools]
        if missing:
            raise ValueError(f"Tool {missing[0]!r} is not enabled; available: {', '.join(self.available_tools) or 'none'}.")
        self.agent.state.tools = [self.available_tools[n] for n in names]
        await self.session.append_active_tools_change(names)
        self._path_tools = names
        await self.events.emit(ActiveToolsChanged(names=names))
        return names

    def offer_tools(self, tools: Iterable[AnyTool], pinned: Iterable[str] | None = None) -> None:
        """The tools on offer changed (an MCP server started, stopped or listed new tools; `/tools`
        turned one on or off; `pinned`: those on whatever the path recorded, None: as before): the
        next request has them. The path records the new set just before that request
        (`record_tools`), so an entry marks where the model first saw it."""
        self.available_tools = {t.name: t for t in tools}
        if pinned is not None:
            self.pinned_tools = frozenset(pinned)
        self.agent.state.tools = offered_on_path(list(self.available_tools.values()), self._path_tools,
                                                 self.pinned_tools)

    async def record_tools(self, *, chosen: bool = False) -> None:
        """An `active_tools_change` entry when the tools the next request carries differ from
        what the path records. A path with messages and no record (a Pi session, an older one)
        carries every tool on offer without one, so an edit there stays a sibling of the prompt
        it replaces; `chosen` (the person picked the tools) records them all the same."""
        active = [t.name for t in self.agent.state.tools]
        if self._path_tools is None and self.agent.state.messages and not chosen:
            return
        if active != (self._path_tools or []) and (active or self._path_tools is not None):
            await self.session.append_active_tools_change(active)
            self._path_tools = active

    # ------------------------------------------------------------ compaction, summaries, forks

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """`/compact`: stop a running reply, summarise the older part of the path with the current
        model, append a compaction entry and continue from it. Raises CompactionError
        (NothingToCompact: "Nothing to compact (session too small)" / "Already compacted";
        CompactionFailed: "Compaction failed: …")."""
        return await self.compactor.compact(custom_instructions)

    def context_usage(self) -> ContextUsage:
        # the compactor's window: smaller than the model's once its provider stated a limit
        return context_usage(self.agent.state.messages, self.compactor.window)

    async def summarize_branch(self, abandoned_leaf_id: str, custom_instructions: str | None = None) -> str:
        """After the leaf moved away from `abandoned_leaf_id`: append a summary of the branch left
        behind as a branch_summary child of the leaf and reload. Returns the new entry's id.
        Raises NothingToSummarize, or SummaryError when the model call fails."""
        if self.is_streaming:
            raise RuntimeError("Stop the running reply (Esc) before adding a branch summary.")
        entry_id = await write_branch_summary(self.session, abandoned_leaf_id, model_complete(self.agent),
                                              self.agent.state.model.context_window, custom_instructions)
        await self.reload()
        return entry_id

    async def fork(self, catalog: SessionCatalog, entry_id: str, *,
                   position: Literal["at", "before"] = "at") -> tuple[SessionStorage, str | None]:
        """A new session (its storage) holding root → entry ("at"), or root → the parent of a user
        message ("before"; its text is returned for the composer). This session is unchanged."""
        return await fork_session(catalog, self.session, entry_id, position)

    # ------------------------------------------------------------ navigation

    async def move_to(self, entry_id: str | None, summary: str | None = None) -> None:
        """Move the leaf (optionally leaving a branch summary) and rebuild the transcript from it."""
        if self.is_streaming:
            raise RuntimeError("Stop the running reply (Esc) before moving in the tree.")
        await self.session.move_to(entry_id, summary)
        await self.reload()

    async def reload(self) -> None:
        """Rebuild agent state from the path at the current leaf (after the tree changed under us)."""
        ctx = await self.session.build_session_context()
        self.agent.state.messages = ctx.messages
        self.agent.state.thinking_level = clamp_thinking(self.agent.state.model, ctx.thinking_level or "off")
        self._path_tools = ctx.active_tool_names
        if ctx.active_tool_names is not None:
            self.agent.state.tools = offered_on_path(list(self.available_tools.values()), ctx.active_tool_names,
                                                     self.pinned_tools)
        await self.events.emit(SessionReloaded(leaf_id=self.session.leaf_id))


class OnPath(Protocol):
    """What `offered_on_path` reads of a tool (an `AgentTool`, or only its name)."""

    @property
    def name(self) -> str: ...
    @property
    def kept_on_every_path(self) -> bool: ...


T = TypeVar("T", bound=OnPath)


def offered_on_path(tools: Sequence[T], recorded: list[str] | None, pinned: frozenset[str] = frozenset()) -> list[T]:
    """The tools a request on this path carries: those the path's recorded set names (all of
    them when it names none), every tool that is `kept_on_every_path` (an MCP server's: it
    is there while its server runs, whatever an older entry says), and the `pinned` ones."""
    if recorded is None:
        return list(tools)
    names = set(recorded) | pinned
    return [t for t in tools if t.name in names or t.kept_on_every_path]


def _user(text: str | UserMessage, images: Iterable[ImageContent]) -> UserMessage:
    if isinstance(text, UserMessage):
        return text
    return UserMessage(content=[TextContent(text=text), *images])
