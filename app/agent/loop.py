"""The agent loop (Pi 0.73.1 semantics): turns, streaming, tools, steering and follow-ups.

Steering is drained at run start and after every completed turn (all tool calls of the turn
finish first); follow-ups only when the agent would otherwise stop. An error/aborted assistant
ends the run without running its tool calls and without touching the queues.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from pydantic import BaseModel

from treechat.llm.abort import AbortSignal
from treechat.llm.types import LlmContext, ModelInfo, StreamFn, StreamOptions, WaitCallback, WaitNotice
from treechat.storage.model import AssistantMessage, TextContent, ToolCall, ToolResultMessage

from .bus import maybe_await
from .convert import accepts_images, convert_to_llm, replace_images
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
from .tools.base import AnyTool, OnUpdate, ToolArgumentsError, text_result
from .types import (
    AgentMessage,
    ConvertToLlm,
    GetApiKey,
    MaybeAwaitable,
    ToolCallBlock,
    ToolResult,
    ToolResultOverride,
    TransformContext,
)

# The loop's one way out: every event goes through here (the Agent reduces it into its state,
# then its bus). Awaited: nothing happens next until the listeners are done with the event.
Emit = Callable[[AgentEvent], Awaitable[None]]
CANCEL_GRACE = 0.5  # seconds a stopped tool gets to return its own result, and again after it is cancelled
ToolExecution = Literal["parallel", "sequential"]


@dataclass
class LoopContext:
    """What one run works on. The loop owns `messages` while it runs (it appends, and replaces
    the streaming reply in place); `tools` are those the requests carry."""

    system_prompt: str
    messages: list[AgentMessage]
    tools: list[AnyTool]


@dataclass
class BeforeToolCall:
    """Handed to `before_tool_call` once a call's arguments are valid, before it runs."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: BaseModel  # the tool's validated `Args` model
    context: LoopContext


@dataclass
class AfterToolCall(BeforeToolCall):
    """Handed to `after_tool_call` with what the tool returned."""

    result: ToolResult = field(default_factory=ToolResult)
    is_error: bool = False


# An exception from either hook becomes that call's error result (the run goes on).
BeforeToolCallHook = Callable[[BeforeToolCall, AbortSignal], MaybeAwaitable[ToolCallBlock | None]]
AfterToolCallHook = Callable[[AfterToolCall, AbortSignal], MaybeAwaitable[ToolResultOverride | None]]


class StopAfterTurn(Protocol):
    """Asked after every turn: True ends the run there (queued messages stay queued)."""

    def __call__(self, *, message: AssistantMessage, tool_results: list[ToolResultMessage], context: LoopContext,
                 new_messages: list[AgentMessage]) -> MaybeAwaitable[bool]: ...


def _none() -> list[AgentMessage]:
    return []


@dataclass
class LoopConfig:
    model: ModelInfo
    stream_fn: StreamFn
    convert_to_llm: ConvertToLlm = convert_to_llm
    transform_context: TransformContext | None = None
    get_api_key: GetApiKey | None = None
    get_steering_messages: Callable[[], list[AgentMessage]] = _none
    get_follow_up_messages: Callable[[], list[AgentMessage]] = _none
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None
    should_stop_after_turn: StopAfterTurn | None = None
    tool_execution: ToolExecution = "parallel"
    thinking_level: str = "off"
    options: StreamOptions = field(default_factory=StreamOptions)  # every request's, before key and level
    images_notified: set[str] = field(default_factory=set)  # models already reported by ImagesReplaced


async def run_agent_loop(prompts: list[AgentMessage], context: LoopContext, config: LoopConfig, emit: Emit,
                         signal: AbortSignal, *, skip_initial_steering: bool = False) -> list[AgentMessage]:
    new_messages = list(prompts)
    await emit(AgentStart())
    await emit(TurnStart())
    for msg in prompts:
        context.messages.append(msg)
        await emit(MessageStart(message=msg))
        await emit(MessageEnd(message=msg))
    await _run_loop(context, new_messages, config, emit, signal, skip_initial_steering)
    return new_messages


async def run_agent_loop_continue(context: LoopContext, config: LoopConfig, emit: Emit,
                                  signal: AbortSignal) -> list[AgentMessage]:
    if not context.messages:
        raise RuntimeError("Cannot continue: no messages in context")
    if context.messages[-1].role == "assistant":
        raise RuntimeError("Cannot continue from message role: assistant")
    new_messages: list[AgentMessage] = []
    await emit(AgentStart())
    await emit(TurnStart())
    await _run_loop(context, new_messages, config, emit, signal, False)
    return new_messages


async def _run_loop(context: LoopContext, new_messages: list[AgentMessage], config: LoopConfig, emit: Emit,
                    signal: AbortSignal, skip_initial_steering: bool) -> None:
    first_turn = True
    pending = [] if skip_initial_steering else list(config.get_steering_messages())
    while True:
        has_more_tool_calls = True
        while has_more_tool_calls or pending:
            if not first_turn:
                await emit(TurnStart())
            first_turn = False
            for msg in pending:
                await emit(MessageStart(message=msg))
                await emit(MessageEnd(message=msg))
                context.messages.append(msg)
                new_messages.append(msg)
            pending = []
            message = await stream_assistant_response(context, config, signal, emit)
            new_messages.append(message)
            if message.stop_reason in ("error", "aborted"):
                await emit(TurnEnd(message=message, tool_results=[]))
                await emit(AgentEnd(messages=new_messages))
                return
            results: list[ToolResultMessage] = []
            if any(isinstance(b, ToolCall) for b in message.content):
                results, terminate = await execute_tool_calls(context, message, config, signal, emit)
                context.messages.extend(results)
                new_messages.extend(results)
                has_more_tool_calls = not terminate
            else:
                has_more_tool_calls = False
            await emit(TurnEnd(message=message, tool_results=results))
            if config.should_stop_after_turn is not None and await maybe_await(
                config.should_stop_after_turn(message=message, tool_results=results, context=context, new_messages=new_messages)
            ):
                await emit(AgentEnd(messages=new_messages))
                return
            pending = list(config.get_steering_messages())
        follow_ups = list(config.get_follow_up_messages())
        if not follow_ups:
            break
        pending = follow_ups
    await emit(AgentEnd(messages=new_messages))


async def stream_assistant_response(context: LoopContext, config: LoopConfig, signal: AbortSignal,
                                    emit: Emit) -> AssistantMessage:
    messages = context.messages
    if config.transform_context is not None:
        messages = await maybe_await(config.transform_context(messages, signal))
    llm_messages = await maybe_await(config.convert_to_llm(messages))
    if not accepts_images(config.model):
        llm_messages, replaced = replace_images(llm_messages)
        if replaced and config.model.ref not in config.images_notified:
            config.images_notified.add(config.model.ref)
            await emit(ImagesReplaced(model=config.model.ref, count=replaced))
    llm_context = LlmContext(context.system_prompt, llm_messages, [t.spec for t in context.tools])
    api_key = await maybe_await(config.get_api_key(config.model.provider)) if config.get_api_key else None
    options = replace(config.options, api_key=api_key, thinking_level=config.thinking_level,
                      on_wait=_wait_announcer(emit, config.options.on_wait))
    added = False
    last: AssistantMessage | None = None
    async for event in config.stream_fn(config.model, llm_context, options, signal):
        if event.type in ("done", "error"):
            return await _finish(context, event.partial, added, emit)
        last = event.partial
        if event.type == "start":
            if not added:
                context.messages.append(last)
                added = True
                await emit(MessageStart(message=last))
        elif added:
            context.messages[-1] = last
            await emit(MessageUpdate(message=last, assistant_event=event))
    # the stream stopped without done/error: finish with what we have, marked as an error
    final = (last or AssistantMessage(api=config.model.api, provider=config.model.provider, model=config.model.id))
    final = final.model_copy(update={"stop_reason": "aborted" if signal.aborted else "error",
                                     "error_message": "The provider stream ended without a result."})
    return await _finish(context, final, added, emit)


def _wait_announcer(emit: Emit, also: WaitCallback | None) -> Callable[[WaitNotice], Awaitable[None]]:
    """The stream's wait notices as agent events (retry_wait / stream_wait), then to `also` if given."""

    async def on_wait(notice: WaitNotice) -> None:
        if notice.kind == "retry":
            await emit(RetryWait(attempt=notice.attempt, max_attempts=notice.max_attempts, delay_s=notice.seconds,
                                 reason=notice.reason, retry_after=notice.retry_after, provider=notice.provider,
                                 started_at=notice.started_at))
        else:
            await emit(StreamWait(phase="first_byte" if notice.kind == "first_byte" else "idle", waited_s=notice.waited, limit_s=notice.seconds,
                                  provider=notice.provider, started_at=notice.started_at))
        if also is not None:
            await maybe_await(also(notice))

    return on_wait


async def _finish(context: LoopContext, final: AssistantMessage, added: bool, emit: Emit) -> AssistantMessage:
    if added:
        context.messages[-1] = final
    else:
        context.messages.append(final)
        await emit(MessageStart(message=final))
    await emit(MessageEnd(message=final))
    return final


# ---------------------------------------------------------------- tools


async def execute_tool_calls(context: LoopContext, assistant: AssistantMessage, config: LoopConfig,
                             signal: AbortSignal, emit: Emit) -> tuple[list[ToolResultMessage], bool]:
    calls = [b for b in assistant.content if isinstance(b, ToolCall)]
    tools = {t.name: t for t in context.tools}
    sequential = config.tool_execution == "sequential" or any(
        (tool := tools.get(c.name)) is not None and tool.execution_mode == "sequential" for c in calls
    )
    runner = _ToolRunner(context, assistant, config, signal, emit, tools)
    outcomes: list[_Outcome] = []
    messages: list[ToolResultMessage] = []
    if sequential:
        for call in calls:
            await emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
            outcome = await runner.run_one(call)
            outcomes.append(outcome)
            messages.append(await _announce_result(call, outcome, emit))
    else:
        prepared: list[_Ready | _Outcome] = []
        for call in calls:
            await emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
            prepared.append(await runner.prepare_or_fail(call))
        ran = iter(await asyncio.gather(*(runner.execute(call, ready) for call, ready in zip(calls, prepared)
                                          if isinstance(ready, _Ready))))
        outcomes = [p if isinstance(p, _Outcome) else next(ran) for p in prepared]
        for call, outcome in zip(calls, outcomes):
            messages.append(await _announce_result(call, outcome, emit))
    finalised = [o for o in outcomes if o.finalised]
    terminate = bool(outcomes) and len(finalised) == len(outcomes) and all(o.result.terminate for o in finalised)
    return messages, terminate


@dataclass(frozen=True)
class _Ready:
    """A call whose arguments are valid and that no hook blocked."""

    tool: AnyTool
    args: BaseModel


@dataclass(frozen=True)
class _Outcome:
    result: ToolResult
    is_error: bool
    finalised: bool  # the tool ran (only then may its result ask the loop to stop)


async def _announce_result(call: ToolCall, outcome: _Outcome, emit: Emit) -> ToolResultMessage:
    msg = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=list(outcome.result.content),
                            details=outcome.result.details, is_error=outcome.is_error)
    if outcome.result.usage is not None:  # (a sub-agent's spending; a result without it is written as Pi's)
        msg.usage = outcome.result.usage
    await emit(MessageStart(message=msg))
    await emit(MessageEnd(message=msg))
    return msg


class _ToolRunner:
    def __init__(self, context: LoopContext, assistant: AssistantMessage, config: LoopConfig, signal: AbortSignal,
                 emit: Emit, tools: dict[str, AnyTool]) -> None:
        self.context, self.assistant, self.config = context, assistant, config
        self.signal, self.emit, self.tools = signal, emit, tools

    async def run_one(self, call: ToolCall) -> _Outcome:
        ready = await self.prepare_or_fail(call)
        return ready if isinstance(ready, _Outcome) else await self.execute(call, ready)

    async def prepare_or_fail(self, call: ToolCall) -> _Ready | _Outcome:
        ready = await self.prepare(call)
        if isinstance(ready, _Ready):
            return ready
        await self.emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=ready, is_error=True))
        return _Outcome(ready, True, False)

    async def prepare(self, call: ToolCall) -> _Ready | ToolResult:
        """The validated arguments, or an immediate error ToolResult."""
        tool = self.tools.get(call.name)
        if tool is None:
            return text_result(f"Tool {call.name} not found", is_error=True)
        if call.arguments_error is not None:  # the adapter could not read the model's JSON
            return text_result(call.arguments_error, is_error=True)
        try:
            args = tool.validate(tool.prepare_arguments(dict(call.arguments)))
            if self.config.before_tool_call is not None:
                verdict = await maybe_await(self.config.before_tool_call(
                    BeforeToolCall(self.assistant, call, args, self.context), self.signal))
                if verdict and verdict.get("block"):
                    return text_result(verdict.get("reason") or "Tool execution was blocked", is_error=True)
            return _Ready(tool, args)
        except ToolArgumentsError as err:
            return text_result(str(err), is_error=True)
        except Exception as err:  # noqa: BLE001  a hook or a tool's own check: its error is the call's result
            return text_result(str(err) or type(err).__name__, is_error=True)

    async def execute(self, call: ToolCall, ready: _Ready) -> _Outcome:
        async def on_update(partial: ToolResult) -> None:
            await self.emit(ToolExecutionUpdate(tool_call_id=call.id, tool_name=call.name,
                                                args=call.arguments, partial_result=partial))

        try:
            result = await run_tool_bounded(ready.tool, call.id, ready.args, self.signal, on_update)
            is_error = bool(result.is_error)
        except Exception as err:  # noqa: BLE001  a tool may raise: its error is its result (the contract)
            result, is_error = text_result(str(err) or type(err).__name__, is_error=True, details={}), True
        if self.config.after_tool_call is not None:
            try:
                override = await maybe_await(self.config.after_tool_call(
                    AfterToolCall(self.assistant, call, ready.args, self.context, result, is_error), self.signal))
                if override:
                    result = ToolResult(
                        content=override.get("content", result.content),
                        details=override.get("details", result.details),
                        is_error=result.is_error,
                        terminate=override.get("terminate", result.terminate),
                        usage=result.usage,  # (spent whatever the hook says)
                    )
                    is_error = override.get("is_error", is_error)
            except Exception as err:  # noqa: BLE001  the after-call hook is a plug-in: its error is the result
                result, is_error = text_result(str(err) or type(err).__name__, is_error=True), True
        await self.emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=result, is_error=is_error))
        return _Outcome(result, is_error, True)


async def run_tool_bounded(tool: AnyTool, call_id: str, args: BaseModel, signal: AbortSignal,
                           on_update: OnUpdate) -> ToolResult:
    """`tool.execute`, stopped within about a second of an abort and after `tool.timeout_for(args)`.

    A stopped tool first gets CANCEL_GRACE to return its own result (bash reports the output so
    far), then is cancelled and gets CANCEL_GRACE again; after that we stop waiting for it."""
    limit = tool.timeout_for(args)
    task = asyncio.ensure_future(tool.execute(call_id, args, signal, on_update))
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({task, aborted}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait({task}, timeout=CANCEL_GRACE)
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_GRACE)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        aborted.cancel()
    if task.done() and not task.cancelled():
        return task.result()  # the tool's own result (or its exception, for the caller)
    if not task.done():
        task.add_done_callback(_drop_outcome)  # it ignored cancellation; never wait for it
    if signal.aborted:
        return text_result(f"Tool {tool.name} was stopped: the run was cancelled.", is_error=True)
    return text_result(f"Tool {tool.name} timed out after {limit:g} s and was stopped.", is_error=True)


def _drop_outcome(task: asyncio.Future[ToolResult]) -> None:
    if not task.cancelled():
        task.exception()  # mark it retrieved: a late failure is not an "exception never retrieved" warning


__all__ = ["LoopConfig", "LoopContext", "BeforeToolCall", "AfterToolCall", "run_agent_loop",
           "run_agent_loop_continue", "TextContent"]
