"""Agent state, reentrancy, queues and failures (Pi 0.73.1's agent.test.ts, ported)."""

from __future__ import annotations

import asyncio

import pytest

from tests.narrow import assistant_of, first_text, of
from treechat.agent import BUSY_CONTINUE, BUSY_PROMPT, Agent, AgentState
from treechat.llm.types import ModelInfo
from treechat.storage.model import TextContent, UserMessage

from .scripted import Recorder, ScriptedStream, reply, texts


def test_default_state() -> None:
    st = Agent(stream_fn=ScriptedStream()).state
    assert (st.system_prompt, st.thinking_level, st.tools, st.messages) == ("", "off", [], [])
    assert (st.is_streaming, st.streaming_message, st.pending_tool_calls, st.error_message) == (False, None, frozenset(), None)


def test_custom_initial_state_and_copies() -> None:
    msgs = [UserMessage(content="a")]
    model = ModelInfo(id="m", provider="p")
    st = AgentState(system_prompt="s", model=model, thinking_level="high", messages=msgs)
    msgs.append(UserMessage(content="b"))
    assert len(st.messages) == 1 and st.model is model and st.thinking_level == "high"
    new = [UserMessage(content="c")]
    st.messages = new
    new.clear()
    assert len(st.messages) == 1
    tools: list = []
    st.tools = tools
    assert st.tools is not tools


async def test_subscribe_emits_nothing_and_unsubscribe_works() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("hi"), reply("again")))
    rec, rec2 = Recorder(), Recorder()
    unsubscribe = agent.subscribe(rec)
    agent.subscribe(rec2)
    agent.state.messages = [UserMessage(content="x")]
    assert rec.events == []
    await agent.prompt("hello")
    n = len(rec.events)
    unsubscribe()
    await agent.prompt("more")
    assert len(rec.events) == n and len(rec2.events) > n


async def test_steer_and_follow_up_do_not_touch_messages() -> None:
    agent = Agent(stream_fn=ScriptedStream())
    agent.steer("s")
    agent.follow_up("f")
    assert agent.state.messages == [] and agent.has_queued_messages()


def test_abort_when_idle_is_harmless() -> None:
    Agent(stream_fn=ScriptedStream()).abort()


async def test_prompt_and_continue_while_running_raise_exact_messages() -> None:
    gate = asyncio.Event()
    agent = Agent(stream_fn=ScriptedStream(reply("done"), gate=gate))
    run = asyncio.create_task(agent.prompt("first"))
    await asyncio.sleep(0)
    assert agent.state.is_streaming
    with pytest.raises(RuntimeError) as err:
        await agent.prompt("second")
    assert str(err.value) == BUSY_PROMPT
    with pytest.raises(RuntimeError) as err:
        await agent.continue_()
    assert str(err.value) == BUSY_CONTINUE
    gate.set()
    await run
    assert not agent.state.is_streaming
    assert texts(agent.state.messages) == ["user:first", "assistant:done"]


async def test_continue_from_assistant_delivers_follow_up() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("r1")))
    agent.state.messages = [UserMessage(content="q"), reply("a0")]
    agent.follow_up("f")
    await agent.continue_()
    assert texts(agent.state.messages)[-2:] == ["user:f", "assistant:r1"]


async def test_continue_from_assistant_with_two_steers_one_at_a_time() -> None:
    stream = ScriptedStream(reply("r1"), reply("r2"))
    agent = Agent(stream_fn=stream)
    agent.state.messages = [UserMessage(content="q"), reply("a0")]
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_()
    assert [m.role for m in agent.state.messages[-4:]] == ["user", "assistant", "user", "assistant"]
    assert stream.calls == 2


async def test_continue_errors() -> None:
    agent = Agent(stream_fn=ScriptedStream())
    with pytest.raises(RuntimeError, match="No messages to continue from"):
        await agent.continue_()
    agent.state.messages = [reply("a")]
    with pytest.raises(RuntimeError, match="Cannot continue from message role: assistant"):
        await agent.continue_()


async def test_session_id_is_forwarded_and_can_change() -> None:
    stream = ScriptedStream(reply("1"), reply("2"))
    agent = Agent(stream_fn=stream, session_id="s-1")
    await agent.prompt("a")
    agent.session_id = "s-2"
    await agent.prompt("b")
    assert [o.session_id for o in stream.options] == ["s-1", "s-2"]


async def test_stream_fn_raising_becomes_a_complete_legal_sequence() -> None:
    agent = Agent(stream_fn=ScriptedStream(RuntimeError("socket on fire")))
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("hi")
    assert rec.types == ["agent_start", "turn_start", "message_start", "message_end",
                         "message_start", "message_end", "turn_end", "agent_end"]
    failure = agent.state.messages[-1]
    assert failure.role == "assistant" and assistant_of(failure).stop_reason == "error"
    assert assistant_of(failure).error_message == "socket on fire" == agent.state.error_message
    assert rec.named("agent_end")[0].messages == [failure]
    assert not agent.state.is_streaming


async def test_listener_raising_is_reported_once_and_run_ends() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("x")))
    rec = Recorder()

    async def bad(event):
        if event.type == "turn_end" and event.message.role == "assistant" and event.message.stop_reason == "stop":
            raise ValueError("listener broke")

    agent.subscribe(bad)
    agent.subscribe(rec)
    await agent.prompt("hi")
    assert rec.types.count("agent_end") == 1
    assert assistant_of(agent.state.messages[-1]).error_message == "listener broke"
    # the listener after the broken one still saw the turn it broke on (the bus's contract)
    ends = [e for e in rec.events if e.type == "turn_end"]
    assert [e.message.stop_reason for e in ends] == ["stop", "error"]


async def test_abort_while_streaming() -> None:
    gate = asyncio.Event()
    agent = Agent(stream_fn=ScriptedStream(reply("never"), gate=gate))
    rec = Recorder()
    agent.subscribe(rec)
    run = asyncio.create_task(agent.prompt("hi"))
    await rec.until(lambda: agent.state.streaming_message is not None
                    and agent.state.streaming_message.role == "assistant")
    agent.abort()
    await run
    assert rec.types[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert assistant_of(agent.state.messages[-1]).stop_reason == "aborted"
    assert agent.state.error_message == "Request was aborted" and not agent.state.is_streaming


async def test_wait_for_idle_returns_after_agent_end_listeners() -> None:
    gate = asyncio.Event()
    agent = Agent(stream_fn=ScriptedStream(reply("x")))
    seen = []

    async def slow(event):
        if event.type == "agent_end":
            await gate.wait()
            seen.append("agent_end")

    agent.subscribe(slow)
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.sleep(0)
    idle = asyncio.create_task(agent.wait_for_idle())
    await asyncio.sleep(0)
    assert not idle.done()
    gate.set()
    await idle
    assert seen == ["agent_end"]
    await run
    await agent.wait_for_idle()  # idle: returns at once


async def test_error_turn_keeps_the_queues() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("", stop="error", error="boom")))
    agent.follow_up("later")
    await agent.prompt("x")
    assert agent.has_queued_messages() and agent.state.error_message == "boom"


async def test_queue_inspection_removal_and_pull_back() -> None:
    agent = Agent(stream_fn=ScriptedStream())
    agent.steer("s1")
    agent.follow_up("f1")
    agent.steer("s2")
    assert [first_text(m) for m in agent.steering_queue.items] == ["s1", "s2"]
    kind, msg = of(tuple, agent.pop_last_queued())
    assert (kind, first_text(msg)) == ("steer", "s2")
    kind, msg = of(tuple, agent.pop_last_queued())
    assert (kind, first_text(msg)) == ("follow_up", "f1")
    assert of(UserMessage, agent.steering_queue.remove(0)).content == [TextContent(text="s1")]
    assert agent.pop_last_queued() is None


async def test_reset_clears_everything() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("", stop="error", error="e")))
    await agent.prompt("x")
    agent.steer("s")
    agent.reset()
    st = agent.state
    assert st.messages == [] and st.error_message is None and not agent.has_queued_messages()
