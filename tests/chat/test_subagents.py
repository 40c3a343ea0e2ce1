"""Sub-agents (the `task` tool) through the controller, on every backend, against the loopback
fake: the child's own context and tools, its session linked both ways, its answer as the result,
parallel calls at once, who asks a question, stopping, failing, and what it spent."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, Gate, Recorded
from treechat.agent.asker import current_asker
from treechat.chat import Chat, ChatError
from treechat.chat.events import SessionOpened
from treechat.chat.subagents import TASK_RECORD
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.session.session import Session
from treechat.storage.base import SessionCatalog
from treechat.storage.model import (
    AssistantMessage,
    CustomEntry,
    MessageEntry,
    ToolCall,
    ToolResultMessage,
    message_text,
)

CHILD_TOOLS = ["read", "ls", "grep", "bash", "edit", "write"]
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


async def make_chat(catalog: SessionCatalog, fake: FakeProvider, tmp_path: Any,
                    tools: list[str] | None = None) -> Chat:
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(tmp_path / "home", env=env)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/gpt-4.1-mini", cwd=str(tmp_path), local_servers=(), tools=tools)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    return chat


def task(call_id: str, description: str, prompt: str) -> dict[str, str]:
    return {"id": call_id, "name": "task", "arguments": json.dumps({"description": description, "prompt": prompt})}


def tool_names(request: Recorded) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


def user_texts(request: Recorded) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else " ".join(p.get("text", "") for p in m["content"])
            for m in request.body["messages"] if m["role"] == "user"]


async def results(chat: Chat) -> dict[str, ToolResultMessage]:
    return {e.message.tool_call_id: e.message for e in await chat.session.get_branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)}


async def child_of(catalog: SessionCatalog, result: ToolResultMessage) -> Session:
    assert isinstance(result.details, dict)
    return await Session.open(await catalog.open(result.details["childSessionId"]))


async def test_a_child_has_its_own_context_and_tools_and_its_answer_is_the_result(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "count files", "List the folder and say how many files it holds.")])
    fake.script_openai(["There are ", "3 files."], usage=USAGE)  # the child
    fake.script_openai(["The sub-agent counted 3."])
    chat = await make_chat(catalog, fake, tmp_path)
    reply = await chat.prompt("How many files are here? Ask a sub-agent.")
    assert reply is not None and message_text(reply) == "The sub-agent counted 3."

    parent_request, child_request, last = fake.requests
    assert "task" in tool_names(parent_request)
    assert tool_names(child_request) == CHILD_TOOLS  # the parent's tools less task
    # its own context: the task alone, under a system prompt telling it whom it answers
    assert user_texts(child_request) == ["List the folder and say how many files it holds."]
    assert "How many files are here" not in json.dumps(child_request.body)
    system = child_request.body["messages"][0]
    assert system["role"] in ("system", "developer") and "You are a sub-agent" in system["content"]
    assert "You are a sub-agent" not in json.dumps(parent_request.body)
    # its answer is the call's result, which the parent's next request carries
    result = (await results(chat))["t1"]
    assert message_text(result) == "There are 3 files." and not result.is_error
    assert any(m["role"] == "tool" and m["content"] == "There are 3 files." for m in last.body["messages"])


async def test_the_childs_transcript_is_a_session_linked_both_ways(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "say hi", "Say hi.")])
    fake.script_openai(["hi"])
    fake.script_openai(["done"])
    chat = await make_chat(catalog, fake, tmp_path)
    await chat.prompt("go")
    result = (await results(chat))["t1"]
    child = await child_of(catalog, result)  # the result names the child
    meta = await child.storage.get_metadata()
    calling = next(e for e in await chat.session.get_branch() if isinstance(e, MessageEntry)
                   and isinstance(e.message, AssistantMessage) and any(isinstance(b, ToolCall) for b in e.message.content))
    assert (meta.parent_session_id, meta.parent_entry_id) == (chat.session_id, calling.id)  # and the child its parent
    entries = await child.get_branch()
    record = entries[0]
    assert isinstance(record, CustomEntry) and record.custom_type == TASK_RECORD
    assert record.data == {"parentSessionId": chat.session_id, "parentEntryId": calling.id, "toolCallId": "t1",
                           "description": "say hi"}
    assert await child.get_session_name() == "say hi"
    messages = [e.message for e in entries if isinstance(e, MessageEntry)]
    assert [(m.role, message_text(m)) for m in messages] == [("user", "Say hi."), ("assistant", "hi")]
    listed = {s.id: s for s in await catalog.list()}
    assert listed[child.session_id].parent_session_id == chat.session_id


async def test_parallel_calls_run_at_once(catalog, fake, tmp_path) -> None:
    both_asked = asyncio.Event()

    def answer(request: Recorded) -> list[Any] | None:
        asked = user_texts(request)
        if asked in (["Answer A."], ["Answer B."]):  # a child: held until both children have asked
            steps = fake.openai_reply([asked[0].replace("Answer ", "answer ").rstrip(".")])
            return [steps[0], Gate(both_asked), *steps[1:]]
        return None

    fake.responder = answer
    fake.script_openai(tool_calls=[task("a", "first", "Answer A."), task("b", "second", "Answer B.")])
    fake.script_openai(["both done"])
    # (children that cannot change files: outside git two that can would not both run,
    # test_subagent_worktrees.py)
    chat = await make_chat(catalog, fake, tmp_path, ["read", "ls", "grep", "task"])
    await chat.send("two things at once")
    await fake.until_requests(3)  # both children asked while neither had an answer: they overlap
    children = fake.requests[1:3]
    assert sorted(user_texts(r)[0] for r in children) == ["Answer A.", "Answer B."]
    released = time.monotonic()
    assert all(r.arrived_at < released for r in children)  # the second came before the first was answered
    both_asked.set()
    await chat.wait_idle()
    got = await results(chat)
    assert {k: message_text(v) for k, v in got.items()} == {"a": "answer A", "b": "answer B"}
    assert len({(await child_of(catalog, r)).session_id for r in got.values()}) == 2


async def test_a_question_inside_the_child_names_it(catalog, fake, tmp_path) -> None:
    asked: list[tuple[str, str | None]] = []

    async def confirm(command: str) -> bool:
        who = current_asker()
        asked.append((command, who.title if who is not None else None))
        return True

    fake.script_openai(tool_calls=[{"id": "b0", "name": "bash", "arguments": json.dumps({"command": "echo parent"})},
                                   task("t1", "fix tests", "Run echo child.")])
    fake.script_openai(tool_calls=[{"id": "b1", "name": "bash", "arguments": json.dumps({"command": "echo child"})}])
    fake.script_openai(["ran it"])  # the child's answer
    fake.script_openai(["all done"])
    chat = await make_chat(catalog, fake, tmp_path)
    chat.confirm = confirm
    await chat.prompt("run things")
    assert asked == [("echo parent", None), ("echo child", "task 'fix tests'")]
    assert message_text((await results(chat))["t1"]) == "ran it"


async def test_stopping_the_parent_stops_the_child(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "wait", "Take your time.")])
    fake.script_hang()  # the child's request: never answered
    chat = await make_chat(catalog, fake, tmp_path)
    await chat.send("go")
    await fake.until_requests(2)
    await chat.stop()
    await chat.wait_idle()
    assert not chat.is_running
    result = (await results(chat))["t1"]
    assert result.is_error and "stopped" in message_text(result)
    child = await child_of(catalog, result)
    replies = [e.message for e in await child.get_branch() if isinstance(e, MessageEntry)
               and isinstance(e.message, AssistantMessage)]
    assert [m.stop_reason for m in replies] == ["aborted"]  # its transcript kept, its reply stopped
    await asyncio.wait_for(fake.client_disconnected.wait(), 5)  # its request was let go


async def test_a_child_that_fails_is_the_calls_error_and_the_parent_goes_on(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "doomed", "Fail.")])
    fake.script_status(400, {"error": {"message": "this model cannot do that", "type": "invalid_request_error"}})
    fake.script_openai(["the sub-agent failed; here is what I know"])
    chat = await make_chat(catalog, fake, tmp_path)
    reply = await chat.prompt("try")
    assert reply is not None and message_text(reply) == "the sub-agent failed; here is what I know"
    result = (await results(chat))["t1"]
    assert result.is_error and "The sub-agent failed" in message_text(result)
    assert "cannot do that" in message_text(result)
    assert isinstance(result.details, dict) and result.details["childSessionId"]


async def test_what_a_child_spent_counts_in_the_parents_status_and_path(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "spend", "Think hard.")], usage=USAGE)
    fake.script_openai(["thought"], usage=USAGE)  # the child
    fake.script_openai(["ok"], usage=USAGE)
    chat = await make_chat(catalog, fake, tmp_path)
    await chat.prompt("go")
    result = (await results(chat))["t1"]
    assert result.usage is not None and result.usage.input == 1000 and result.usage.cost.total > 0
    status = chat.status()
    assert status.tokens_in == 3000 and status.tokens_out == 600  # two replies of the parent's, one of the child's
    state = await chat.session.path_state()
    assert state.input_tokens == 3000 and state.context_tokens == 1200  # (the child's context is not the parent's)
    stats = await chat.session.storage.get_session_stats()
    assert stats.input_tokens == 3000 and stats.assistant_messages == 2
    assert abs(state.cost_total - 3 * result.usage.cost.total) < 1e-9


async def test_the_status_counts_a_running_child_as_it_spends(catalog, fake, tmp_path) -> None:
    more = asyncio.Event()
    fake.script_openai(tool_calls=[task("t1", "look", "Look around.")], usage=USAGE)
    fake.script_openai(tool_calls=[{"id": "l1", "name": "ls", "arguments": "{}"}], usage=USAGE)  # the child's first
    fake.script_openai(["seen"], usage=USAGE, gate=more)  # its second, held
    fake.script_openai(["ok"], usage=USAGE)
    chat = await make_chat(catalog, fake, tmp_path)
    await chat.send("go")
    await fake.until_requests(3)
    assert chat.status().tokens_in == 2000  # the parent's reply and the child's first, not yet a result on the path
    more.set()
    await chat.wait_idle()
    assert chat.status().tokens_in == 4000 and not chat.s.live_children  # now counted once, by the path


async def test_a_result_opens_the_childs_session_and_back_returns(catalog, fake, tmp_path) -> None:
    fake.script_openai(tool_calls=[task("t1", "say hi", "Say hi.")])
    fake.script_openai(["hi"])
    fake.script_openai(["done"])
    chat = await make_chat(catalog, fake, tmp_path)
    opened: list[SessionOpened] = []
    chat.subscribe(lambda event: opened.append(event) if isinstance(event, SessionOpened) else None)
    await chat.prompt("go")
    parent, parent_leaf = chat.session_id, chat.leaf_id
    result_entry = next(e for e in await chat.session.get_branch() if isinstance(e, MessageEntry)
                        and isinstance(e.message, ToolResultMessage))
    assert await chat.child_session(parent_leaf or "") is None  # (the reply after it names no child)
    assert await chat.parent_session() is None
    link = await chat.open_child(result_entry.id, composer_text="half typed")
    assert chat.session_id == link.session_id != parent and link.description == "say hi" and link.call_id == "t1"
    came_from = await chat.parent_session()
    assert came_from is not None and came_from.session_id == parent and came_from.description == "say hi"
    assert [message_text(e.message) for e in await chat.session.get_branch() if isinstance(e, MessageEntry)] == [
        "Say hi.", "hi"]
    first = next(e for e in await chat.session.get_branch() if isinstance(e, MessageEntry))
    await chat.move_to(first.id)  # navigable like any branch: back goes through its own moves first
    await chat.back()
    assert chat.session_id == link.session_id
    await chat.back()  # then to the session that called it, where its leaf was
    assert (chat.session_id, chat.leaf_id) == (parent, parent_leaf)
    assert opened[-1].composer_text == "half typed"  # what was typed there came back with it


async def test_a_fork_is_no_sub_agents_session(catalog, fake, tmp_path) -> None:
    fake.script_openai(["hello"])
    chat = await make_chat(catalog, fake, tmp_path)
    await chat.prompt("hi")
    await chat.fork(chat.leaf_id)
    assert await chat.parent_session() is None
    with pytest.raises(ChatError):
        await chat.back()
