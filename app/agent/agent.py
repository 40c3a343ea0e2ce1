"""The Agent: runs the loop, reduces its events into AgentState, and fans them out on its bus.

Contracts: `prompt` and `continue_` never raise for what goes wrong inside a run (a provider, a
tool, a hook or a listener failing): the run ends with an error or aborted reply that listeners
see like any other (message_end, turn_end, agent_end), and `state.error_message` says why. They
raise only when called while a run is active (BUSY_PROMPT / BUSY_CONTINUE) or with nothing to
continue from. Listeners get every event after the state has been updated by it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import assert_never

from treechat.llm.abort import AbortSignal
from treechat.llm.types import StreamFn, StreamOptionFields, StreamOptions
from treechat.storage.model import AssistantMessage, ImageContent, TextContent, UserMessage

from .bus import EventBus, Listener, Unsubscribe
from .convert import convert_to_llm as default_convert
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    ImagesReplaced,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    RetryWait,
    StreamWait,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from .loop import (
    AfterToolCallHook,
    BeforeToolCallHook,
    LoopConfig,
    LoopContext,
    StopAfterTurn,
    ToolExecution,
    run_agent_loop,
    run_agent_loop_continue,
)
from .queues import MessageQueue, QueueKind, QueueMode
from .state import AgentState
from .types import AgentMessage, ConvertToLlm, GetApiKey, TransformContext

log = logging.getLogger(__name__)

BUSY_PROMPT = ("Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
               "or wait for completion.")
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."

Executor = Callable[[LoopContext, LoopConfig, AbortSignal], Awaitable[list[AgentMessage]]]


@dataclass
class _Run:
    signal: AbortSignal = field(default_factory=AbortSignal)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False  # agent_end was emitted


class Agent:
    def __init__(
        self,
        *,
        state: AgentState | None = None,
        stream_fn: StreamFn | None = None,
        convert_to_llm: ConvertToLlm = default_convert,
        transform_context: TransformContext | None = None,
        get_api_key: GetApiKey | None = None,
        before_tool_call: BeforeToolCallHook | None = None,
        after_tool_call: AfterToolCallHook | None = None,
        should_stop_after_turn: StopAfterTurn | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecution = "parallel",
        session_id: str | None = None,
        stream_options: StreamOptionFields | None = None,
    ) -> None:
        self.state = state or AgentState()
        if stream_fn is None:
            from treechat.llm.registry import stream_model  # the real providers

            stream_fn = stream_model
        self.stream_fn: StreamFn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.should_stop_after_turn = should_stop_after_turn
        self.tool_execution = tool_execution
        self.session_id = session_id
        # what every request of a run carries; the loop adds the key, the level and its wait announcer
        self.stream_options = StreamOptions(**(stream_options or {}))
        self.steering_queue = MessageQueue(steering_mode)
        self.follow_up_queue = MessageQueue(follow_up_mode)
        self.events: EventBus[AgentEvent] = EventBus()
        self.images_notified: set[str] = set()  # model refs told "images were replaced" (once each)
        self._run: _Run | None = None
        self._emit_lock = asyncio.Lock()

    # ------------------------------------------------------------ listeners

    def subscribe(self, listener: Listener[AgentEvent]) -> Unsubscribe:
        """Every event, after the state is updated by it (the bus's contract: treechat.agent.bus).
        A listener that raises ends the run as an error (after the other listeners had the event).
        The run's stop signal is `agent.signal`."""
        return self.events.subscribe(listener)

    # ------------------------------------------------------------ queues

    @property
    def steering_mode(self) -> QueueMode:
        return self.steering_queue.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self.steering_queue.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self.follow_up_queue.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self.follow_up_queue.mode = mode

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message for the next turn of the current run (or the start of the next run)."""
        self.steering_queue.enqueue(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message delivered only when the agent would otherwise stop."""
        self.follow_up_queue.enqueue(_as_message(message))

    def clear_steering_queue(self) -> list[AgentMessage]:
        return self.steering_queue.clear()

    def clear_follow_up_queue(self) -> list[AgentMessage]:
        return self.follow_up_queue.clear()

    def clear_all_queues(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        return self.steering_queue.clear(), self.follow_up_queue.clear()

    def has_queued_messages(self) -> bool:
        return bool(self.steering_queue) or bool(self.follow_up_queue)

    def pop_last_queued(self) -> tuple[QueueKind, AgentMessage] | None:
        """Take back the most recently queued message: ("steer" | "follow_up", message), or None."""
        s, f = self.steering_queue.last_order(), self.follow_up_queue.last_order()
        if s is None and f is None:
            return None
        kind: QueueKind
        if f is None or (s is not None and s > f):
            queue, kind = self.steering_queue, "steer"
        else:
            queue, kind = self.follow_up_queue, "follow_up"
        message = queue.pop_last()
        return (kind, message) if message is not None else None

    # ------------------------------------------------------------ runs

    @property
    def signal(self) -> AbortSignal | None:
        return self._run.signal if self._run else None

    async def prompt(self, input: str | AgentMessage | list[AgentMessage], images: Iterable[ImageContent] = ()) -> None:
        """Start a run with a text, a message or a list of messages; returns when the run is over."""
        if self._run is not None:
            raise RuntimeError(BUSY_PROMPT)
        prompts: list[AgentMessage]
        if isinstance(input, str):
            prompts = [UserMessage(content=[TextContent(text=input), *images])]
        elif isinstance(input, list):
            prompts = list(input)
        else:
            prompts = [input]
        await self._run_with_lifecycle(lambda ctx, cfg, sig: run_agent_loop(prompts, ctx, cfg, self._process_event, sig))

    async def continue_(self) -> None:
        """Resume from the current transcript (e.g. after an error), delivering queued messages first."""
        if self._run is not None:
            raise RuntimeError(BUSY_CONTINUE)
        messages = self.state.messages
        if not messages:
            raise RuntimeError("No messages to continue from")
        if messages[-1].role == "assistant":
            steering = self.steering_queue.drain()
            if steering:
                await self._run_with_lifecycle(lambda c, g, s: run_agent_loop(
                    steering, c, g, self._process_event, s, skip_initial_steering=True))
                return
            follow = self.follow_up_queue.drain()
            if follow:
                await self._run_with_lifecycle(lambda c, g, s: run_agent_loop(follow, c, g, self._process_event, s))
                return
            raise RuntimeError("Cannot continue from message role: assistant")
        await self._run_with_lifecycle(lambda c, g, s: run_agent_loop_continue(c, g, self._process_event, s))

    def abort(self) -> None:
        if self._run is not None:
            self._run.signal.abort()

    async def wait_for_idle(self) -> None:
        run = self._run
        if run is not None:
            await run.done.wait()

    def reset(self) -> None:
        """Clear transcript, runtime state and queues (does not stop a running run)."""
        st = self.state
        st.messages = []
        st._streaming_message, st._pending_tool_calls, st._error_message = None, frozenset(), None
        self.clear_all_queues()

    def request_options(self) -> StreamOptions:
        """What every request of this agent carries before its key and thinking level."""
        options = self.stream_options
        if self.session_id is not None and options.session_id is None:
            options = replace(options, session_id=self.session_id)
        return options

    def _loop_config(self) -> LoopConfig:
        options = self.request_options()
        return LoopConfig(
            model=self.state.model, stream_fn=self.stream_fn, convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context, get_api_key=self.get_api_key,
            get_steering_messages=self.steering_queue.drain, get_follow_up_messages=self.follow_up_queue.drain,
            before_tool_call=self.before_tool_call, after_tool_call=self.after_tool_call,
            should_stop_after_turn=self.should_stop_after_turn, tool_execution=self.tool_execution,
            thinking_level=self.state.thinking_level, options=options, images_notified=self.images_notified,
        )

    async def _run_with_lifecycle(self, executor: Executor) -> None:
        # everything up to the first await is synchronous, so a second call in the same tick sees the run
        if self._run is not None:
            raise RuntimeError("Agent is already processing.")
        run = self._run = _Run()
        st = self.state
        st._is_streaming, st._streaming_message, st._error_message = True, None, None
        try:
            context = LoopContext(st.system_prompt, list(st.messages), list(st.tools))
            await executor(context, self._loop_config(), run.signal)
        except asyncio.CancelledError:
            run.signal.abort()
            await self._handle_run_failure(run, "Request was aborted")
            raise
        except Exception as err:  # noqa: BLE001  the run's contract: whatever fails inside ends it with an error reply
            await self._handle_run_failure(run, str(err) or type(err).__name__)
        finally:
            st._is_streaming, st._streaming_message, st._pending_tool_calls = False, None, frozenset()
            self._run = None
            run.done.set()

    async def _handle_run_failure(self, run: _Run, text: str) -> None:
        """Turn a raised run into a legal event sequence ending in agent_end, so it is persisted too."""
        st = self.state
        st._error_message = text
        if run.ended:
            return
        partial = st.streaming_message if isinstance(st.streaming_message, AssistantMessage) else None
        model = st.model
        failure = (partial.model_copy() if partial else AssistantMessage(
            content=[TextContent(text="")], api=model.api, provider=model.provider, model=model.id))
        failure.stop_reason = "aborted" if run.signal.aborted else "error"
        failure.error_message = text
        try:
            for event in (MessageStart(message=failure), MessageEnd(message=failure),
                          TurnEnd(message=failure, tool_results=[]), AgentEnd(messages=[failure])):
                await self._process_event(event)
        except Exception:  # a listener failing again must not hide the original failure
            log.exception("listener failed while reporting a failed run")

    async def _process_event(self, event: AgentEvent) -> None:
        run = self._run
        if run is None:
            raise RuntimeError("Agent listener invoked outside active run")
        async with self._emit_lock:
            self._reduce(event, run)
            await self.events.emit(event)

    def _reduce(self, event: AgentEvent, run: _Run) -> None:
        st = self.state
        match event:
            case MessageStart() | MessageUpdate():
                st._streaming_message = event.message
            case MessageEnd():
                st._streaming_message = None
                st.messages.append(event.message)
            case ToolExecutionStart():
                st._pending_tool_calls = st._pending_tool_calls | {event.tool_call_id}
            case ToolExecutionEnd():
                st._pending_tool_calls = st._pending_tool_calls - {event.tool_call_id}
            case TurnEnd():
                if event.message.error_message:
                    st._error_message = event.message.error_message
            case AgentEnd():
                st._streaming_message = None
                run.ended = True
            case AgentStart() | TurnStart() | ToolExecutionUpdate() | ImagesReplaced() | RetryWait() | StreamWait():
                pass
            case _:
                assert_never(event)


def _as_message(message: str | AgentMessage) -> AgentMessage:
    return UserMessage(content=[TextContent(text=message)]) if isinstance(message, str) else message
