"""Sub-agents: what runs a `task` call's child agent (the `SpawnChild` of agent/tools/task.py).

A child is an AgentSession of its own, on a session of its own made in the same store like a fork:

- **Linked both ways.** Its header names the parent session and the parent's entry that holds the
  call (the assistant message, as a fork names the entry it was made at); its first entry, a
  `treechat.task` custom entry (`TASK_RECORD`), names the call's id and description, and the
  session is named after the description. The call's result names the child (`details`:
  `childSessionId`), from its first partial result on, so a front end can open it while it runs.
- **Its own context.** A fresh system prompt (treechat's, told it answers another agent; its
  tools; the working folder) and the task's prompt: nothing of the parent's conversation.
- **The caller's tools less `task`** (no grandchildren), as the caller's request carried them:
  the same tool objects, so a checkpoint of a child's edit lands on the parent's path (moving
  back there offers to undo it) — except for a child that can change files started while another
  does in the caller's folder, whose built-in tools work in a git worktree of its own
  (chat/subtrees.py) — and its questions go to the same front end, named: the child
  runs inside `asking_as(...)` (agent/asker.py), which a front end reads where it builds a
  question ("task 'fix tests' asks: …"). `--yes` in `-p`, RPC and ACP answer it as they would
  the parent.
- **The caller's model and thinking level** at the call. (Another model for children would be a
  config.toml key read in `_make`; there is none: the model a person chose answers.)
- **Its answer** (the text of its last reply, bounded like a tool's output) is the result; what it
  spent is the result's `usage`, which the parent's path and session count like a reply's
  (storage/aggregates.py). Until that result is on the path, the status adds what the running
  children spent so far (`ChatState.live_children`).
- **Stopped with its caller.** The call's signal (Esc, Ctrl+C, quitting) stops the child; a
  child that cannot start or fails is the call's error result, never the parent's failure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treechat.agent.asker import Asker, asking_as
from treechat.agent.events import AgentEnd, AgentStart, MessageEnd, ToolExecutionStart
from treechat.agent.tools.base import OnUpdate, text_result
from treechat.agent.tools.task import TaskArgs, TaskTool
from treechat.agent.tools.truncate import truncate_head
from treechat.agent.types import JsonObject, ToolResult
from treechat.chat.errors import ChatError
from treechat.chat.events import StatusChanged
from treechat.chat.subtrees import InWorktree, Subtrees, can_change_files, details_of, report
from treechat.session.agent_session import AgentSession
from treechat.session.compaction import CompactionSettings
from treechat.session.events import SessionEvent
from treechat.session.session import BranchWriter, Session
from treechat.storage.base import EntryCursor, SessionStorage, StorageError
from treechat.storage.model import (
    AssistantMessage,
    Cost,
    CustomEntry,
    Entry,
    MessageEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    message_text,
)

if TYPE_CHECKING:
    from treechat.agent.tools.base import AnyTool
    from treechat.chat.navigation import Navigation
    from treechat.chat.session_switch import SessionSwitch
    from treechat.chat.state import ChatState, Run
    from treechat.chat.workspace import Workspace
    from treechat.llm.abort import AbortSignal

log = logging.getLogger(__name__)

TASK_RECORD = "treechat.task"  # the child's first entry: {parentSessionId, parentEntryId, toolCallId, description}
ENTRY_HOPS = 64  # entries looked at back from the caller's leaf for the reply that made the call


class Subagents:
    def __init__(self, s: ChatState, workspace: Workspace) -> None:
        self.s = s
        self.subtrees = Subtrees(s, workspace)

    async def spawn(self, call_id: str, args: TaskArgs, signal: AbortSignal | None,
                    on_update: OnUpdate) -> ToolResult:
        """Run the child for one `task` call; its answer, or why there is none, as the result."""
        run = self._caller(call_id)
        if run is None:
            return text_result("The task tool runs only inside a reply of this chat.", is_error=True)
        if signal is not None and signal.aborted:
            return text_result("The sub-agent was not started: the run was stopped.", is_error=True)
        tools = [t for t in run.agent.state.tools if t.name != TaskTool.name]
        # where it changes files (chat/subtrees.py): decided before any wait, so two calls of one
        # batch never both take the caller's folder
        in_folder = can_change_files(tools) and self.subtrees.claim_folder(run, call_id)
        try:
            place: InWorktree | None = None
            if can_change_files(tools) and not in_folder:
                made = await self.subtrees.make(run, call_id)
                if isinstance(made, str):
                    return text_result(made, is_error=True)
                place = made
            try:
                try:
                    child = await self._make(run.agent, call_id, args, tools, place)
                except (StorageError, OSError, ValueError) as err:
                    reason = (err.strerror if isinstance(err, OSError) else None) or str(err) or type(err).__name__
                    return text_result(f"The sub-agent could not start: {reason}", is_error=True)
                result = await _ChildRun(self.s, run.agent, child, call_id, args, place is not None).run(signal,
                                                                                                        on_update)
            finally:
                back = await self.subtrees.finish(place, call_id) if place is not None else None
            if back is None:
                return result
            text = "\n\n".join([*(c.text for c in result.content if isinstance(c, TextContent)), report(back)])
            details = {**result.details, **details_of(back)} if isinstance(result.details, dict) else details_of(back)
            return ToolResult(content=[TextContent(text=text)], details=details, is_error=result.is_error,
                              usage=result.usage)
        finally:
            if in_folder:
                self.subtrees.release(run, call_id)

    def _caller(self, call_id: str) -> Run | None:
        """The run whose reply made the call: of those going on their branches, the one whose
        pending calls hold it."""
        return next((r for r in self.s.every_run() if call_id in r.agent.state.pending_tool_calls), None)

    async def _make(self, parent: AgentSession, call_id: str, args: TaskArgs, tools: list[AnyTool],
                    place: InWorktree | None) -> AgentSession:
        entry_id = await _calling_entry(parent.session, call_id)
        parent_id = parent.session.session_id
        storage = await self.s.catalog.create(cwd=self.s.cwd, parent_session_id=parent_id, parent_entry_id=entry_id)
        session = Session(storage, None)
        record: JsonObject = {"parentSessionId": parent_id, "parentEntryId": entry_id, "toolCallId": call_id,
                              "description": args.description}
        await session.append_custom(TASK_RECORD, record)
        await session.append_session_info(args.description)
        if place is not None:
            tools = await self.subtrees.tools_for(place, session, tools)
        compaction = self.s.settings.compaction
        child = await AgentSession.create(
            session, model=parent.state.model, registry=self.s.registry, thinking_level=parent.state.thinking_level,
            tools=tools, active_tools=[t.name for t in tools], stream_fn=self.s.stream_fn,
            stream_options=self.s.stream_options or None,
            compaction_settings=CompactionSettings(enabled=compaction.enabled, reserve_tokens=compaction.reserve_tokens,
                                                   keep_recent_tokens=compaction.keep_recent_tokens))
        child.recovery_folders = list(parent.recovery_folders)
        child.agent.state.system_prompt = self.s.prompt_builder.build(
            tools, sub_agent=True, folder=place.tree.cwd if place is not None else None)
        return child


async def _calling_entry(session: Session | BranchWriter, call_id: str) -> str | None:
    """The entry of the reply holding the call: the nearest assistant message back from its tip
    (what may come after it before its results: checkpoints, results of a sequential batch)."""
    entry_id = session.leaf_id
    for _ in range(ENTRY_HOPS):
        entry = await session.get_entry(entry_id) if entry_id is not None else None
        if entry is None:
            return None
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            calls = (b.id for b in entry.message.content if isinstance(b, ToolCall))
            return entry.id if call_id in calls else None
        entry_id = entry.parent_id
    return None


class _ChildRun:
    """One child's run: its progress told as the call's partial results, what it spent, its answer."""

    def __init__(self, s: ChatState, parent: AgentSession, child: AgentSession, call_id: str, args: TaskArgs,
                 in_worktree: bool = False) -> None:
        self.s, self.parent, self.child, self.call_id, self.args = s, parent, child, call_id, args
        self.in_worktree = in_worktree
        self.session_id = child.session.session_id
        self.replies = 0
        self.tool_calls = 0
        self.spent = Usage()

    def details(self) -> JsonObject:
        return {"childSessionId": self.session_id, "description": self.args.description, "replies": self.replies,
                "toolCalls": self.tool_calls}

    async def run(self, signal: AbortSignal | None, on_update: OnUpdate) -> ToolResult:
        self.s.live_children[self.call_id] = self.spent
        self._until_result()

        async def tell(doing: str) -> None:
            try:
                await on_update(text_result(doing, details=self.details()))
            except Exception:  # noqa: BLE001  a listener of the parent's: its failure is not the child's
                log.exception("telling a sub-agent's progress failed")

        async def on_child(event: SessionEvent) -> None:
            match event:
                case AgentStart() if signal is not None and signal.aborted:
                    self.child.abort_now()  # stopped between the check and the run's start
                case MessageEnd(message=AssistantMessage() as reply):
                    self.replies += 1
                    self.spent = _added(self.spent, reply.usage)
                    self.s.live_children[self.call_id] = self.spent
                    self.s.emit(StatusChanged())
                case ToolExecutionStart():
                    self.tool_calls += 1
                    await tell(f"{event.tool_name} …")
                case _:
                    pass

        unsubscribe = self.child.subscribe(on_child)
        stop = signal.add_listener(self.child.abort_now) if signal is not None else (lambda: None)
        try:
            # the child session exists: a front end can open it now
            await tell("started in a git worktree of its own (another sub-agent changes files here); its changes "
                       "come into this folder when it ends" if self.in_worktree else "started")
            with asking_as(Asker(self.args.description, self.session_id)):
                await self.child.prompt(self.args.prompt)
        finally:
            stop()
            unsubscribe()
        return self._answer(signal)

    def _answer(self, signal: AbortSignal | None) -> ToolResult:
        last = next((m for m in reversed(self.child.state.messages) if isinstance(m, AssistantMessage)), None)
        where = f"its transcript is session {self.session_id}"
        if (signal is not None and signal.aborted) or (last is not None and last.stop_reason == "aborted"):
            text, failed = f"The sub-agent was stopped before it finished ({where}).", True
        elif last is None or last.stop_reason == "error":
            why = (last.error_message if last is not None else None) or self.child.state.error_message or "no reply"
            text, failed = f"The sub-agent failed: {why} ({where}).", True
        else:
            answer, cut = truncate_head(message_text(last).strip())
            text = answer or "(The sub-agent ended without an answer.)"
            if cut:
                text += f"\n\n[The answer was cut here; the whole of it is in the sub-agent's session {self.session_id}.]"
            failed = False
        return ToolResult(content=[TextContent(text=text)], details=self.details(), is_error=failed, usage=self.spent)

    def _until_result(self) -> None:
        """What the child spent stays in the status until the call's result (which counts it) is
        on the parent's path, or the parent's run ends without one."""

        def on_parent(event: SessionEvent) -> None:
            match event:
                case MessageEnd(message=ToolResultMessage(tool_call_id=self.call_id)) | AgentEnd():
                    self.s.live_children.pop(self.call_id, None)
                    self.s.emit(StatusChanged())
                    unsubscribe()
                case _:
                    pass

        unsubscribe = self.parent.subscribe(on_parent)


@dataclass(frozen=True)
class ChildLink:
    """A `task` call's result and the sub-agent's session it names."""

    session_id: str
    description: str
    call_id: str


@dataclass(frozen=True)
class ParentLink:
    """A sub-agent's session and the session (and its entry, the reply) whose `task` call made it."""

    session_id: str
    entry_id: str | None
    description: str


def child_link(entry: Entry | None) -> ChildLink | None:
    """The sub-agent's session a `task` call's result names (None: not such a result)."""
    if not (isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)
            and entry.message.tool_name == TaskTool.name and isinstance(entry.message.details, dict)):
        return None
    details = entry.message.details
    session_id, description = details.get("childSessionId"), details.get("description")
    if not isinstance(session_id, str) or not session_id:
        return None
    return ChildLink(session_id, description if isinstance(description, str) else "", entry.message.tool_call_id)


async def parent_link(storage: SessionStorage) -> ParentLink | None:
    """The session whose `task` call made this one (its header and its first entry), or None."""
    meta = await storage.get_metadata()
    if not meta.parent_session_id:
        return None
    first = await storage.get_entries(EntryCursor(limit=1))
    record = first[0] if first else None
    if not (isinstance(record, CustomEntry) and record.custom_type == TASK_RECORD and isinstance(record.data, dict)):
        return None  # a fork, not a sub-agent's session
    description = record.data.get("description")
    return ParentLink(meta.parent_session_id, meta.parent_entry_id,
                      description if isinstance(description, str) else "")


class Lineage:
    """The way between a session and its sub-agents' sessions: a `task` result opens the child's;
    back from the start of a child's goes to the session that called it. (Made after Navigation:
    it opens sessions.)"""

    def __init__(self, s: ChatState, *, session_switch: SessionSwitch, navigation: Navigation) -> None:
        self.s = s
        self.session_switch = session_switch
        self.navigation = navigation

    async def child(self, entry_id: str) -> ChildLink | None:
        return child_link(await self.s.session.get_entry(entry_id))

    async def parent(self) -> ParentLink | None:
        return await parent_link(self.s.session.storage)

    async def open_child(self, entry_id: str, *, composer_text: str | None = None) -> ChildLink:
        link = await self.child(entry_id)
        if link is None:
            raise ChatError("That entry is not a sub-agent's result: Enter on a task's result opens its session.")
        if self.s.is_running:
            raise ChatError(f"{_running(self.s)} before opening a sub-agent's session.")
        try:
            await self.session_switch.resume(link.session_id, composer_text=composer_text)
        except StorageError as err:
            raise ChatError(f"The sub-agent's session cannot be opened: {err}") from None
        return link

    async def back(self, *, composer_text: str | None = None) -> None:
        """Back in the leaf history; at its start in a sub-agent's session, to the session that
        called it (where its leaf was)."""
        if self.s.leaf_history:
            await self.navigation.back()
            return
        link = await self.parent()
        if link is None:
            await self.navigation.back()  # (says there is nothing to go back to)
            return
        if self.s.is_running:
            raise ChatError(f"{_running(self.s)} before leaving this session.")
        try:
            await self.session_switch.resume(link.session_id, composer_text=composer_text)
        except StorageError as err:
            raise ChatError(f"The session that started this sub-agent cannot be opened: {err}") from None


def _running(s: ChatState) -> str:
    """What to stop first: the reply on screen, or runs on other branches (the tree marks them)."""
    going = sum(1 for r in s.runs.values() if r.going)
    if s.is_running_here and going == 1:
        return "Stop the running reply (Esc)"
    return (f"{going} {'replies are' if going > 1 else 'reply is'} running on {'branches' if going > 1 else 'a branch'} "
            "of this session (the tree marks them): stop them (Esc on each branch)")


def _added(total: Usage, more: Usage) -> Usage:
    a, b = total.cost, more.cost
    return Usage(input=total.input + more.input, output=total.output + more.output,
                 cache_read=total.cache_read + more.cache_read, cache_write=total.cache_write + more.cache_write,
                 total_tokens=total.total_tokens + more.total_tokens,
                 cost=Cost(input=a.input + b.input, output=a.output + b.output, cache_read=a.cache_read + b.cache_read,
                           cache_write=a.cache_write + b.cache_write, total=a.total + b.total))


__all__ = ["ENTRY_HOPS", "TASK_RECORD", "ChildLink", "Lineage", "ParentLink", "Subagents", "child_link", "parent_link"]
