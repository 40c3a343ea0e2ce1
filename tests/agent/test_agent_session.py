"""AgentSession: persistence as events happen, settings as entries, rebuild on resume and moves."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from tests.narrow import assistant_of, of
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import ModelInfo
from treechat.session.agent_session import AgentSession
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import MessageEntry, ModelChangeEntry, TextContent

from .scripted import Recorder, ScriptedStream, reply, texts
from .test_loop import echo_tool

MODEL = ModelInfo(id="fake-model", provider="openai", api="openai", reasoning=True)
PLAIN = ModelInfo(id="plain", provider="openai", api="openai", reasoning=False)


def claude(text: str):
    # the path's model comes from the last assistant message too (Pi's buildSessionContext)
    return reply(text).model_copy(update={"provider": "anthropic", "model": "claude-sonnet-4-5"})


async def new_session() -> Session:
    return await Session.open(await MemoryCatalog().create())


def kinds(entries) -> list[str]:
    return [e.message.role if isinstance(e, MessageEntry) else e.type for e in entries]


async def test_new_session_records_settings_then_every_message() -> None:
    session = await new_session()
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "v"})]), reply("done"))
    s = await AgentSession.create(session, model=MODEL, thinking_level="high", tools=[echo_tool()], stream_fn=stream)
    await s.prompt("go")
    entries = await session.get_branch()
    assert kinds(entries) == ["model_change", "thinking_level_change", "active_tools_change",
                              "user", "assistant", "toolResult", "assistant"]
    ctx = await session.build_session_context()
    change = of(ModelChangeEntry, entries[0])
    assert (change.provider, change.model_id) == ("openai", "fake-model") and ctx.thinking_level == "high"
    assert ctx.active_tool_names == ["echo"]


async def test_user_message_is_stored_before_the_request_goes_out() -> None:
    from tests.fake_provider import FakeProvider

    async with FakeProvider() as fp:
        fp.script_openai(["hi"])
        session = await new_session()
        appended: list[tuple[str, float]] = []
        original = session.storage.append_entry

        async def recording(entry, *, move_leaf=True):
            await original(entry, move_leaf=move_leaf)
            role = getattr(getattr(entry, "message", None), "role", entry.type)
            appended.append((role, time.monotonic()))

        session.storage.append_entry = recording  # type: ignore[method-assign]  # every append, timed
        registry = ModelRegistry(env={"OPENAI_BASE_URL": fp.base_url, "OPENAI_API_KEY": "k"})
        s = await AgentSession.create(session, model="openai/fake-model", registry=registry)
        await s.prompt("hello")
        user_time = next(t for role, t in appended if role == "user")
        assistant_time = next(t for role, t in appended if role == "assistant")
        assert user_time < fp.requests[0].arrived_at < assistant_time
        assert texts(s.state.messages) == ["user:hello", "assistant:hi"]


async def test_failed_run_is_persisted() -> None:
    session = await new_session()
    s = await AgentSession.create(session, model=MODEL, stream_fn=ScriptedStream(RuntimeError("kaput")))
    await s.prompt("x")
    last = (await session.get_branch())[-1]
    assert assistant_of(last).stop_reason == "error"
    assert assistant_of(last).error_message == "kaput"


async def test_resume_rebuilds_state_and_model_from_the_path() -> None:
    catalog = MemoryCatalog()
    storage = await catalog.create()
    session = await Session.open(storage)
    registry = ModelRegistry(env={})
    s = await AgentSession.create(session, model="anthropic/claude-sonnet-4-5", registry=registry,
                                  thinking_level="low", stream_fn=ScriptedStream(claude("a1")))
    await s.prompt("q1")
    again = await Session.open(await catalog.open(storage.session_id))
    n = len(await again.get_branch())
    resumed = await AgentSession.create(again, registry=registry, stream_fn=ScriptedStream(claude("a2")))
    assert resumed.state.model.ref == "anthropic/claude-sonnet-4-5"
    assert resumed.state.thinking_level == "low"
    assert texts(resumed.state.messages) == ["user:q1", "assistant:a1"]
    assert len(await again.get_branch()) == n  # nothing new appended when nothing changed
    await resumed.prompt("q2")
    assert texts(resumed.state.messages)[-2:] == ["user:q2", "assistant:a2"]


async def test_a_path_whose_reply_named_no_model_asks_for_one() -> None:
    """provider "" and model "" on the path (a reply saved with none chosen) are no model: the
    one-sentence "No model chosen", not a ref error about "/"."""
    session = await new_session()
    await session.append_message(reply("done").model_copy(update={"provider": "", "model": ""}))
    registry = ModelRegistry(env={})
    with pytest.raises(ValueError, match="^No model chosen"):
        await AgentSession.create(session, registry=registry, stream_fn=ScriptedStream())
    chosen = await AgentSession.create(session, model="openai/fake-model", registry=registry, stream_fn=ScriptedStream())
    assert chosen.state.model.ref == "openai/fake-model"


async def test_moving_the_leaf_rebuilds_the_transcript() -> None:
    session = await new_session()
    s = await AgentSession.create(session, model=MODEL, stream_fn=ScriptedStream(reply("a1"), reply("a2"), reply("b")))
    rec = Recorder()
    s.subscribe(rec)
    await s.prompt("one")
    await s.prompt("two")
    entries = await session.get_branch()
    first_answer = next(e for e in entries if isinstance(e, MessageEntry) and e.message.role == "assistant")
    await s.move_to(first_answer.id)
    assert texts(s.state.messages) == ["user:one", "assistant:a1"]
    assert rec.types[-1] == "session_reloaded"
    await s.prompt("branch")
    assert texts(s.state.messages) == ["user:one", "assistant:a1", "user:branch", "assistant:b"]


async def test_model_and_thinking_changes_are_entries_and_clamped() -> None:
    session = await new_session()
    registry = ModelRegistry(env={})
    s = await AgentSession.create(session, model=MODEL, registry=registry, stream_fn=ScriptedStream())
    before = len(await session.get_branch())
    assert await s.set_thinking_level("medium") == "medium"
    assert await s.set_thinking_level("medium") == "medium"  # unchanged: no entry
    assert await s.set_thinking_level("xhigh") == "high"  # this model has no xhigh
    await s.set_model(PLAIN)  # cannot reason: thinking goes off
    entries = (await session.get_branch())[before:]
    assert [e.type for e in entries] == ["thinking_level_change", "thinking_level_change", "model_change",
                                         "thinking_level_change"]
    assert s.state.thinking_level == "off" and s.state.model is PLAIN
    with pytest.raises(ValueError, match="Thinking level must be one of"):
        await s.set_thinking_level("extreme")


async def test_active_tools_change_is_an_entry() -> None:
    session = await new_session()
    tools = [echo_tool("a"), echo_tool("b")]
    s = await AgentSession.create(session, model=MODEL, tools=tools, active_tools=[], stream_fn=ScriptedStream())
    assert s.state.tools == []
    assert await s.set_active_tools(["b"]) == ["b"]
    assert (await session.build_session_context()).active_tool_names == ["b"]
    assert [t.name for t in s.state.tools] == ["b"]
    with pytest.raises(ValueError, match="not enabled"):
        await s.set_active_tools(["zzz"])


async def test_queue_updates_and_forwarded_events() -> None:
    session = await new_session()
    s = await AgentSession.create(session, model=MODEL, stream_fn=ScriptedStream(reply("r1"), reply("r2")))
    rec = Recorder()
    s.subscribe(rec)
    await s.follow_up("later")
    assert rec.events[-1].follow_up == ["later"]
    assert await s.pop_last_queued() == "later"
    await s.follow_up("later")
    await s.prompt("now")
    assert texts(s.state.messages) == ["user:now", "assistant:r1", "user:later", "assistant:r2"]
    assert "agent_end" in rec.types and rec.named("queue_update")[-1].follow_up == []
    with pytest.raises(RuntimeError):
        s.agent._run = cast(Any, object())  # simulate a running agent for the streaming check
        try:
            await s.prompt("x")
        finally:
            s.agent._run = None


async def test_abort_mid_stream_closes_the_request_and_stores_the_partial() -> None:
    import asyncio

    from tests.fake_provider import FakeProvider

    async with FakeProvider() as fp:
        fp.script_anthropic(["kept ", "never"], hang_after=4)  # start, ping, block start, "kept ", then silence
        session = await new_session()
        registry = ModelRegistry(env={"ANTHROPIC_BASE_URL": fp.base_url})
        s = await AgentSession.create(session, model="anthropic/claude-haiku-4-5", registry=registry)
        got_text = asyncio.Event()
        s.subscribe(lambda event: got_text.set() if event.type == "message_update" else None)
        run = asyncio.create_task(s.prompt("go"))
        await got_text.wait()
        await s.abort()
        await run
        await fp.client_disconnected.wait()  # the HTTP request was closed
        last = assistant_of((await session.get_branch())[-1])
        assert last.role == "assistant" and assistant_of(last).stop_reason == "aborted"
        assert last.content == [TextContent(text="kept ")]
        assert s.state.error_message == "Request was aborted"
