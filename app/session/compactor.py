"""Compaction bound to a live AgentSession: `/compact`, the threshold and overflow triggers, the
summary call on the current model, and the context-usage figure for the status bar.

Nothing is deleted: a compaction is a new entry under the leaf, so moving the leaf to the entry
before it shows the full history again. Triggers:
- manual: `compact()` stops a running reply first;
- threshold: after every turn that ran tools (the run goes on with the compacted transcript), after
  a run ends, before a prompt, and before each request that would not fit — on the last reply's
  real usage, or on the estimate where the server sends none (llama-cpp-python);
- overflow: the provider said the context is too long; compact, drop the failed reply from the
  transcript (it stays in the tree) and retry once.

Every plan fits the window: the model's, or the smaller one a provider stated in an overflow
error ("maximum context length is 8192 tokens"), which becomes this session's budget for that
model. The kept tail, the summary and the summary request itself are sized to it, with room left
for the reply, so a compaction against an 8k local server produces something the server accepts.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from treechat.agent.agent import Agent
from treechat.agent.bus import EventBus, maybe_await
from treechat.agent.events import AgentEnd, AgentEvent, AgentStart, MessageEnd, TurnEnd
from treechat.agent.types import AgentMessage
from treechat.llm.abort import AbortSignal
from treechat.llm.errors import is_context_overflow, stated_context_limit
from treechat.llm.local import shown_ref
from treechat.llm.types import LlmContext, ModelInfo
from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    Entry,
    TextContent,
    UserMessage,
)

from .compaction import (
    SAFETY,
    Budget,
    CompactionError,
    CompactionPlan,
    CompactionSettings,
    NothingToCompact,
    TooLargeToCompact,
    calculate_context_tokens,
    compaction_budget,
    estimate_tokens,
    prepare_compaction,
    should_compact,
)
from .context import entry_to_message
from .events import CompactionEnd, CompactionReason, CompactionResult, CompactionStart, SessionEvent
from .summarize import Complete, SummaryError, summarize_for_compaction

if TYPE_CHECKING:
    from .agent_session import AgentSession

OVERFLOW_RETRY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


@dataclass(frozen=True)
class ContextUsage:
    tokens: int
    window: int
    percent: float
    estimated: bool  # True until a reply newer than the latest compaction reports real usage


class CompactionFailed(CompactionError, SummaryError):
    """The summary could not be produced or stored; nothing was written."""


# ---------------------------------------------------------------- pure helpers


def context_tokens(messages: Sequence[AgentMessage]) -> tuple[int, bool]:
    """(tokens, estimated): the last real usage plus estimates of what came after it. Usage older
    than the compaction summary measured the transcript before it, so it does not count."""
    compacted_at = None
    for m in messages:
        if isinstance(m, CompactionSummaryMessage):
            compacted_at = m.timestamp
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted"):
            used = calculate_context_tokens(m.usage)
            if used <= 0:
                continue
            if compacted_at is not None and m.timestamp < compacted_at:
                break
            return used + sum(estimate_tokens(t) for t in messages[i + 1 :]), False
    return sum(estimate_tokens(m) for m in messages), True


def context_usage(messages: Sequence[AgentMessage], window: int) -> ContextUsage:
    tokens, estimated = context_tokens(messages)
    percent = round(100.0 * tokens / window, 1) if window > 0 else 0.0
    return ContextUsage(tokens=tokens, window=window, percent=percent, estimated=estimated)


def is_overflow_error(message: AgentMessage, model: ModelInfo) -> bool:
    """A failed reply from `model` (same provider and id) saying the context did not fit."""
    if not isinstance(message, AssistantMessage) or message.stop_reason != "error":
        return False
    if (message.provider, message.model) != (model.provider, model.id):
        return False  # another model's limit says nothing about this one
    return message.error_kind == "overflow" or is_context_overflow(message.error_message)


def model_complete(agent: Agent, signal: AbortSignal | None = None) -> Complete:
    """A `Complete` on the agent's current model and stream function, thinking off."""

    async def complete(system: str, prompt: str, max_tokens: int) -> str:
        model = agent.state.model
        key = await maybe_await(agent.get_api_key(model.provider)) if agent.get_api_key else None
        if model.max_tokens:
            max_tokens = min(max_tokens, model.max_tokens)
        options = replace(agent.request_options(), api_key=key, thinking_level="off", max_tokens=max_tokens)
        context = LlmContext(system, [UserMessage(content=[TextContent(text=prompt)])], [])
        final = None
        async for event in agent.stream_fn(model, context, options, signal):
            if event.type in ("done", "error"):
                final = event.partial
        if final is None:
            raise RuntimeError("the provider stream ended without a result")
        if final.stop_reason in ("error", "aborted"):
            raise RuntimeError(final.error_message or "the provider failed")
        return "\n".join(b.text for b in final.content if isinstance(b, TextContent))

    return complete


def _last_compaction(path: Sequence[Entry]) -> CompactionEntry | None:
    return next((e for e in reversed(path) if isinstance(e, CompactionEntry)), None)


def _reason(err: BaseException) -> str:
    # SummaryError wraps the provider's sentence; show that sentence, not the wrapper's prefix
    return str(err.__cause__ or err)


_ADVICE = {
    "user": "shorten it or attach less and send it again",
    "toolResult": "go back to before that tool call (the tree) and ask for a smaller output, e.g. read with offset and limit",
}


def too_large_text(err: TooLargeToCompact, model_ref: str, budget: Budget) -> str:
    """The one sentence for a message no compaction can make room for, and what to do."""
    what = {"toolResult": "tool result", "user": "message"}.get(err.role, f"{err.role} message")
    advice = _ADVICE.get(err.role, "go back to before it (the tree) and continue from there")
    overhead = int(budget.overhead * budget.ratio)
    if overhead > err.tokens:  # the message is small: what does not fit is what goes with every request
        return (f"Nothing to compact: the system prompt and tool definitions alone take about {overhead:,} tokens "
                f"of {model_ref}'s {budget.window:,}-token context window, leaving too little for the "
                f"conversation and the reply; shorten AGENTS.md/CLAUDE.md or system_prompt, enable fewer tools, "
                f"or switch to a model with a larger window.")
    fixed = (f" (the system prompt and tool definitions alone take about {overhead:,} tokens; long AGENTS.md "
             "files count)") if overhead > budget.window // 3 else ""
    return (f"Nothing to compact: the newest {what} alone is about {err.tokens:,} tokens, more than fits in "
            f"{model_ref}'s {budget.window:,}-token context window next to a summary and the reply{fixed}; "
            f"{advice}, or switch to a model with a larger window.")


class _Replan(Exception):
    """The summary request itself overflowed and the provider stated a smaller window: plan again."""


# ---------------------------------------------------------------- the compactor


class Compactor:
    """Owned by one AgentSession; tells `events` (the session's bus) of every compaction."""

    def __init__(self, owner: AgentSession, settings: CompactionSettings, events: EventBus[SessionEvent]) -> None:
        self.owner = owner
        self.settings = settings
        self.events = events
        self.is_compacting = False
        self._lock = asyncio.Lock()
        self._overflow_attempted = False
        self._after_run: CompactionReason | None = None  # "overflow" | "threshold", decided at agent_end
        self._compacted_in_run = False
        self._signal: AbortSignal | None = None
        self._learned: dict[str, int] = {}  # model ref -> the window its provider stated
        self._ratio: dict[str, float] = {}  # model ref -> provider tokens per estimated token (≥ 1)
        self._user_transform = owner.agent.transform_context
        owner.agent.transform_context = self._transform
        # told when a provider states the model's window (the chat keeps it, in state.json too)
        self.on_window: Callable[[int], None] | None = None

    @property
    def agent(self) -> Agent:
        return self.owner.agent

    async def _transform(self, messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        if not self._compacted_in_run and self._over_threshold(messages):
            # this request would not fit (a server that sends no usage is measured by the estimate):
            # compact first rather than send it whole and be refused
            await self._auto("threshold", signal)
        if self._compacted_in_run:
            # the loop still holds the transcript from before the compaction; send the compacted one
            messages = list(self.agent.state.messages)
        if self._user_transform is not None:
            messages = await maybe_await(self._user_transform(messages, signal))
        return messages

    def abort(self) -> None:
        if self._signal is not None:
            self._signal.abort()

    async def wait_idle(self) -> None:
        async with self._lock:
            pass

    def new_prompt(self) -> None:
        self._overflow_attempted = False

    # ------------------------------------------------------------ the window and the budget

    @property
    def window(self) -> int:
        """The context window plans are made for: the model's, or the smaller one its provider
        stated when a request overflowed (0: unknown)."""
        model = self.agent.state.model
        declared = max(0, model.context_window or 0)
        learned = self._learned.get(model.ref, 0)
        return min(declared, learned) if declared and learned else (learned or declared)

    def _overhead(self) -> int:
        # the system prompt and the tool definitions go out with every request
        state = self.agent.state
        chars = len(state.system_prompt or "")
        for tool in state.tools:
            chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
        return math.ceil(chars / 4)

    def budget(self) -> Budget:
        model = self.agent.state.model
        return compaction_budget(self.window, self.settings, self._overhead(), self._ratio.get(model.ref, 1.0))

    def _learn(self, window: int) -> None:
        self._learned[self.agent.state.model.ref] = window
        if self.on_window is not None:
            self.on_window(window)

    def learn_from_overflow(self, error_text: str | None, sent: Sequence[AgentMessage]) -> None:
        """A request of `sent` failed as too long: take the window the error states (or, when it
        states none, plan for clearly less than was sent), and how the provider counts tokens."""
        ref = self.agent.state.model.ref
        estimate = sum(estimate_tokens(m) for m in sent) + self._overhead()
        stated = stated_context_limit(error_text)
        if stated is None:
            guess = int(estimate * 0.75)
            if guess > 0 and (self.window <= 0 or guess < self.window):
                self._learned[ref] = guess
            return
        self._learn(stated.window)
        if stated.requested and estimate > 0:
            self._ratio[ref] = min(4.0, max(self._ratio.get(ref, 1.0), stated.requested / estimate))

    # ------------------------------------------------------------ agent events

    async def on_agent_event(self, event: AgentEvent) -> None:
        signal = self.agent.signal
        match event:
            case AgentStart():
                self._compacted_in_run = False
                self._after_run = None
            case MessageEnd(message=AssistantMessage() as reply):
                if reply.stop_reason != "error":
                    self._overflow_attempted = False
            case TurnEnd() if event.tool_results and not (signal is not None and signal.aborted):
                await self.check_threshold(signal)  # the run continues with the compacted transcript
            case AgentEnd():
                self._after_run = self._decide_after_run()
            case _:
                pass

    def _decide_after_run(self) -> CompactionReason | None:
        messages = self.agent.state.messages
        last = messages[-1] if messages else None
        if not isinstance(last, AssistantMessage) or last.stop_reason == "aborted":
            return None
        if is_overflow_error(last, self.agent.state.model):
            return "overflow"
        return "threshold"  # also after other errors: the usage before them may already be too high

    async def after_run(self) -> None:
        """Once a run is over: recover from an overflow (compact, retry once), compact on the
        threshold, and deliver messages queued meanwhile."""
        while self.settings.enabled:
            pending, self._after_run = self._after_run, None
            if pending == "overflow":
                if self._overflow_attempted:
                    await self.events.emit(CompactionEnd(reason="overflow", error=OVERFLOW_RETRY_FAILED))
                    return
                self._overflow_attempted = True
                messages = self.agent.state.messages
                last = messages[-1]
                self.learn_from_overflow(last.error_message if isinstance(last, AssistantMessage) else None,
                                         messages[:-1])
                if await self._auto("overflow", None, will_retry=True) is None:
                    return
            elif pending == "threshold":
                if await self.check_threshold(None) is None or not self.agent.has_queued_messages():
                    return
            else:
                return
            try:
                await self.agent.continue_()
            except RuntimeError:  # another run started meanwhile; it drains the queues itself
                return

    def _over_threshold(self, messages: Sequence[AgentMessage]) -> bool:
        """What `messages` take (the last reply's real usage, else the estimate: some servers send
        no usage) leaves less than the reply's room in the window."""
        window = self.window
        if not self.settings.enabled or window <= 0 or self.is_compacting:
            return False
        tokens, estimated = context_tokens(messages)
        if estimated:  # the system prompt and tools go out too, counted as this provider counts,
            # and chars/4 is a guess: leave it the margin plans leave (SAFETY)
            ref = self.agent.state.model.ref
            tokens = int((tokens + self._overhead()) * self._ratio.get(ref, 1.0) / SAFETY)
        return should_compact(tokens, window, self.settings, self.budget().reply)

    async def check_threshold(self, signal: AbortSignal | None) -> CompactionResult | None:
        if not self._over_threshold(self.agent.state.messages):
            return None
        return await self._auto("threshold", signal)

    # ------------------------------------------------------------ running one compaction

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        if self.agent.state.is_streaming:
            await self.owner.abort()
        await self.events.emit(CompactionStart(reason="manual"))
        try:
            async with self._lock:
                result = await self._run("manual", custom_instructions, None, announce=False)
        except CompactionError as err:
            await self.events.emit(CompactionEnd(reason="manual", error=str(err)))
            raise
        await self.events.emit(CompactionEnd(reason="manual", result=result))
        return result

    async def _auto(self, reason: CompactionReason, signal: AbortSignal | None, will_retry: bool = False) -> CompactionResult | None:
        announced: list[bool] = []
        async with self._lock:
            try:
                result = await self._run(reason, None, signal, announce=True, announced=announced)
            except TooLargeToCompact as err:
                if reason == "overflow":  # the person must learn why the reply failed for good
                    await self._announce(reason, announced)
                    await self.events.emit(CompactionEnd(reason=reason, error=str(err)))
                return None
            except NothingToCompact as err:
                if reason == "overflow":
                    await self._announce(reason, announced)
                    await self.events.emit(CompactionEnd(reason=reason, error=f"Context overflow recovery failed: {err}"))
                return None  # a threshold with nothing new to summarise is not news
            except CompactionError as err:
                what = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
                detail = str(err).removeprefix("Compaction failed: ")
                await self.events.emit(CompactionEnd(reason=reason, error=f"{what}: {detail}"))
                return None
        await self.events.emit(CompactionEnd(reason=reason, result=result, will_retry=will_retry))
        return result

    async def _announce(self, reason: CompactionReason, announced: list[bool]) -> None:
        if not announced:
            announced.append(True)
            await self.events.emit(CompactionStart(reason=reason))

    async def _run(self, trigger: CompactionReason, custom: str | None, signal: AbortSignal | None, *, announce: bool,
                   announced: list[bool] | None = None) -> CompactionResult:
        """Plan and summarise; once more with a smaller plan if the summary request itself was
        too long and its provider said how long it may be."""
        announced = [] if announced is None else announced
        for attempt in (1, 2):
            path, plan = await self._plan(trigger)
            if announce:
                await self._announce(trigger, announced)
            try:
                return await self._execute(trigger, path, plan, custom, signal, may_replan=attempt == 1)
            except _Replan:
                continue
        raise AssertionError("unreachable: the second attempt never replans")

    async def _plan(self, trigger: CompactionReason) -> tuple[list[Entry], CompactionPlan]:
        path = await self.owner.session.get_branch()
        budget = self.budget()
        try:
            try:
                plan = prepare_compaction(path, self.agent.state.messages, self.settings,
                                          tail_budget=budget.keep_tail if budget.window > 0 else None,
                                          keep_last_turn=trigger == "manual")
            except TooLargeToCompact:  # the newest message is long for this window: a shorter reply
                plan = prepare_compaction(path, self.agent.state.messages, self.settings,
                                          tail_budget=budget.keep_tail_most, keep_last_turn=trigger == "manual")
        except TooLargeToCompact as err:
            model = self.agent.state.model
            raise TooLargeToCompact(too_large_text(err, shown_ref(model.provider, model.id), budget),
                                    tokens=err.tokens, role=err.role) from None
        prev = _last_compaction(path)
        if trigger != "manual" and prev is not None and prev.first_kept_entry_id == plan.first_kept_entry_id:
            raise NothingToCompact("Already compacted")  # never summarise the same range twice in a row
        return path, plan

    async def _execute(self, trigger: CompactionReason, path: list[Entry], plan: CompactionPlan, custom: str | None,
                       signal: AbortSignal | None, *, may_replan: bool = False) -> CompactionResult:
        session = self.owner.session
        self.is_compacting = True
        self._signal = signal or AbortSignal()
        started = time.monotonic()
        budget = self.budget()
        sized = budget.window > 0
        try:
            try:
                summary, files = await summarize_for_compaction(
                    plan, model_complete(self.agent, self._signal), self.settings.reserve_tokens, custom,
                    max_tokens=budget.summary if sized else None, input_tokens=budget.summary_input if sized else None)
            except SummaryError as err:
                reason = _reason(err)
                stated = stated_context_limit(reason) if is_context_overflow(reason) else None
                if may_replan and stated is not None and (self.window <= 0 or stated.window < self.window):
                    self._learn(stated.window)
                    raise _Replan() from err
                raise CompactionFailed(f"Compaction failed: {reason}") from err
            if session.leaf_id != path[-1].id:
                raise CompactionFailed("Compaction failed: the conversation changed while it was being summarised.")
            kept_from = next(i for i, e in enumerate(path) if e.id == plan.first_kept_entry_id)
            kept = [m for e in path[kept_from:] if not isinstance(e, CompactionEntry)
                    and (m := entry_to_message(e)) is not None]
            tokens_after = estimate_tokens(CompactionSummaryMessage(summary=summary, tokens_before=plan.tokens_before))
            tokens_after += sum(estimate_tokens(m) for m in kept)
            # the covered range lets the transcript show the originals; the duration goes on the card
            details = {**files, "coveredFromId": plan.covered_from_id, "coveredToId": plan.covered_to_id,
                       "durationMs": int((time.monotonic() - started) * 1000)}
            entry_id = await session.append_compaction(
                summary, plan.first_kept_entry_id, plan.tokens_before,
                tokens_after=tokens_after, trigger=trigger, details=details)
            messages = (await session.build_session_context()).messages
            if trigger == "overflow" and messages and isinstance(messages[-1], AssistantMessage) \
                    and messages[-1].stop_reason == "error":
                messages.pop()  # the failed reply stays in the tree; the retry replaces it
            self.agent.state.messages = messages
            if self.agent.state.is_streaming:
                self._compacted_in_run = True
            return CompactionResult(entry_id=entry_id, summary=summary, tokens_before=plan.tokens_before,
                                    tokens_after=tokens_after, trigger=trigger,
                                    first_kept_entry_id=plan.first_kept_entry_id)
        finally:
            self.is_compacting = False
            self._signal = None
