"""The loop: Pi 0.73.1's event sequences and the cases of its agent-loop tests, ported."""

from __future__ import annotations

import asyncio
from typing import cast

from pydantic import BaseModel

from tests.narrow import assistant_of, first_text, of
from treechat.agent import Agent, FunctionTool, ToolResult, text_result
from treechat.storage.model import CustomMessage, ToolResultMessage, UserMessage

from .scripted import Recorder, ScriptedStream, reply, role_of, texts


class Value(BaseModel):
    value: str


def echo_tool(name="echo", *, mode="parallel", delay=None, started=None, terminate=False, updates=0):
    async def run(args, signal, on_update):
        if started is not None:
            started.append(args.value)
        for i in range(updates):
            await on_update({"step": i})
        if delay is not None:
            await delay.wait()
        return ToolResult([text_result(f"echo {args.value}").content[0]], terminate=terminate)

    return FunctionTool(name, "Echo the value", Value, run, execution_mode=mode)


async def test_plain_prompt_sequence() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("hello")))
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("hi")
    assert [(t, role_of(e)) for t, e in zip(rec.types, rec.events) if t != "message_update"] == [
        ("agent_start", ""), ("turn_start", ""), ("message_start", "user"), ("message_end", "user"),
        ("message_start", "assistant"), ("message_end", "assistant"), ("turn_end", "assistant"), ("agent_end", "")]
    assert "message_update" in rec.types
    assert rec.named("turn_end")[0].tool_results == []
    assert texts(rec.named("agent_end")[0].messages) == ["user:hi", "assistant:hello"]


async def test_custom_message_is_filtered_and_transform_context_applies() -> None:
    stream = ScriptedStream(reply("a"), reply("b"))
    agent = Agent(stream_fn=stream)
    agent.state.messages = [CustomMessage(custom_type="notification", content="note", display=True)]
    await agent.prompt("q")
    # custom messages become user content for the LLM (convert_to_llm)
    assert [m.role for m in stream.contexts[0].messages] == ["user", "user"]
    seen = []

    async def keep_last_two(messages, signal):
        return messages[-2:]

    def convert(messages):
        seen.append(len(messages))
        return [m for m in messages if m.role in ("user", "assistant", "toolResult")]

    agent2 = Agent(stream_fn=ScriptedStream(reply("x")), transform_context=keep_last_two, convert_to_llm=convert)
    agent2.state.messages = [UserMessage(content="1"), reply("2"), UserMessage(content="3")]
    await agent2.prompt("4")
    assert seen == [2]
    assert len(agent2.state.messages) == 5  # transform is for the call only


async def test_one_tool_call() -> None:
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "v"})]), reply("done"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [echo_tool()]
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("go")
    start, end = rec.named("tool_execution_start")[0], rec.named("tool_execution_end")[0]
    assert start.args == {"value": "v"} and end.is_error is False
    assert end.result.content[0].text == "echo v"
    assert texts(agent.state.messages) == ["user:go", "assistant:echo", "toolResult:echo v", "assistant:done"]
    assert stream.contexts[1].tools[0].name == "echo"


async def test_sequential_sequence_with_two_calls() -> None:
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "a"}), ("t2", "echo", {"value": "b"})]), reply("fin"))
    agent = Agent(stream_fn=stream, tool_execution="sequential")
    agent.state.tools = [echo_tool(updates=1)]
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("go")
    seq = [(t, getattr(e, "tool_call_id", role_of(e))) for t, e in zip(rec.types, rec.events) if t != "message_update"]
    assert seq[6:] == [
        ("tool_execution_start", "t1"), ("tool_execution_update", "t1"), ("tool_execution_end", "t1"),
        ("message_start", "toolResult"), ("message_end", "toolResult"),
        ("tool_execution_start", "t2"), ("tool_execution_update", "t2"), ("tool_execution_end", "t2"),
        ("message_start", "toolResult"), ("message_end", "toolResult"),
        ("turn_end", "assistant"), ("turn_start", ""), ("message_start", "assistant"), ("message_end", "assistant"),
        ("turn_end", "assistant"), ("agent_end", "")]
    assert len(rec.named("agent_end")[0].messages) == 5


async def test_parallel_slow_and_fast() -> None:
    slow_gate, started = asyncio.Event(), cast(list[str], [])
    slow = echo_tool("slow", delay=slow_gate, started=started)
    fast = echo_tool("fast", started=started)
    stream = ScriptedStream(reply("", calls=[("t1", "slow", {"value": "1"}), ("t2", "fast", {"value": "2"})]), reply("ok"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [slow, fast]
    rec = Recorder()

    async def release_when_fast_ends(event):
        if event.type == "tool_execution_end" and event.tool_call_id == "t2":
            slow_gate.set()

    agent.subscribe(rec)
    agent.subscribe(release_when_fast_ends)
    await agent.prompt("go")
    assert started == ["1", "2"]  # t2 started before t1 finished
    assert [e.tool_call_id for e in rec.named("tool_execution_start")] == ["t1", "t2"]
    assert [e.tool_call_id for e in rec.named("tool_execution_end")] == ["t2", "t1"]
    results = [e.message.tool_call_id for e in rec.named("message_start") if role_of(e) == "toolResult"]
    assert results == ["t1", "t2"]
    assert [m.tool_call_id for m in rec.named("turn_end")[0].tool_results] == ["t1", "t2"]


async def test_steering_is_injected_after_all_tool_calls_complete() -> None:
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "a"}), ("t2", "echo", {"value": "b"})]), reply("ok"))
    agent = Agent(stream_fn=stream, tool_execution="sequential")
    agent.state.tools = [echo_tool()]
    rec = Recorder()

    async def steer_after_first_tool(event):
        if event.type == "tool_execution_end" and event.tool_call_id == "t1":
            agent.steer("interrupt")

    agent.subscribe(steer_after_first_tool)
    agent.subscribe(rec)
    await agent.prompt("go")
    ends = rec.named("tool_execution_end")
    assert [e.is_error for e in ends] == [False, False]
    order = [e.message.role + (":" + e.message.content[0].text if e.message.role == "user" else "")
             for e in rec.named("message_start")]
    assert order.index("user:interrupt") > max(i for i, r in enumerate(order) if r == "toolResult")
    assert texts(stream.contexts[1].messages)[-1] == "user:interrupt"
    assert [m.role for m in stream.contexts[1].messages] == ["user", "assistant", "toolResult", "toolResult", "user"]


async def test_queued_before_prompt_one_at_a_time_and_all() -> None:
    def run(mode):
        stream = ScriptedStream(reply("r1"), reply("r2"), reply("r3"))
        agent = Agent(stream_fn=stream, steering_mode=mode, follow_up_mode=mode)
        agent.steer("S1")
        agent.steer("S2")
        agent.follow_up("F1")
        if mode == "all":
            agent.follow_up("F2")
        return agent, stream

    agent, stream = run("one-at-a-time")
    await agent.prompt("P")
    assert [t.split(":")[1] for t in texts(agent.state.messages)] == ["P", "S1", "r1", "S2", "r2", "F1", "r3"]
    assert stream.calls == 3
    agent, stream = run("all")
    await agent.prompt("P")
    assert [t.split(":")[1] for t in texts(agent.state.messages)] == ["P", "S1", "S2", "r1", "F1", "F2", "r2"]


class _Started(list[str]):
    """The values of the tools that started, and an event for the first."""

    def __init__(self) -> None:
        super().__init__()
        self.first = asyncio.Event()

    def append(self, value: str) -> None:
        super().append(value)
        self.first.set()


async def test_sequential_tool_forces_sequential_batch() -> None:
    gate, started = asyncio.Event(), _Started()
    first = echo_tool("first", delay=gate, started=started)
    second = echo_tool("second", mode="sequential", started=started)
    stream = ScriptedStream(reply("", calls=[("t1", "first", {"value": "1"}), ("t2", "second", {"value": "2"})]), reply("ok"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [first, second]
    rec = Recorder()
    agent.subscribe(rec)
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.first.wait(), 30)
    await asyncio.sleep(0)  # one more turn of the loop: room for t2 to start, if it (wrongly) would
    assert [e.tool_call_id for e in rec.named("tool_execution_start")] == ["t1"]  # t2 waits for t1
    gate.set()
    await run
    assert started == ["1", "2"]


async def test_terminate_all_stops_mixed_continues() -> None:
    calls = [("t1", "stop1", {"value": "a"}), ("t2", "stop2", {"value": "b"})]
    stream = ScriptedStream(reply("", calls=calls), reply("never"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [echo_tool("stop1", terminate=True), echo_tool("stop2", terminate=True)]
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("go")
    assert stream.calls == 1 and len(rec.named("turn_end")) == 1
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "toolResult"]

    stream = ScriptedStream(reply("", calls=calls), reply("again"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [echo_tool("stop1", terminate=True), echo_tool("stop2")]
    await agent.prompt("go")
    assert stream.calls == 2


async def test_after_tool_call_can_terminate_and_before_can_block() -> None:
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "a"})]), reply("never"))
    agent = Agent(stream_fn=stream, after_tool_call=lambda ctx, signal: {"terminate": True})
    agent.state.tools = [echo_tool()]
    await agent.prompt("go")
    assert stream.calls == 1

    seen_assistant = []

    def block(ctx, signal):
        seen_assistant.append(agent.state.messages[-1].role)  # message_end is a barrier before preflight
        return {"block": True, "reason": "not today"}

    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "a"})]), reply("ok"))
    agent = Agent(stream_fn=stream, before_tool_call=block)
    agent.state.tools = [echo_tool()]
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert of(ToolResultMessage, result).is_error and first_text(result) == "not today" and seen_assistant == ["assistant"]


async def test_invalid_arguments_and_unknown_tool_give_clear_error_results() -> None:
    calls = [("t1", "echo", {"wrong": 1}), ("t2", "nope", {})]
    stream = ScriptedStream(reply("", calls=calls), reply("ok"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [echo_tool()]
    await agent.prompt("go")
    bad, missing = agent.state.messages[2], agent.state.messages[3]
    assert of(ToolResultMessage, bad).is_error and first_text(bad).startswith('Validation failed for tool "echo":\n  - value: Field required')
    assert '"wrong": 1' in first_text(bad)
    assert of(ToolResultMessage, missing).is_error and first_text(missing) == "Tool nope not found"


async def test_tool_that_raises_becomes_an_error_result() -> None:
    async def boom(args, signal, on_update):
        raise OSError("disk gone")

    stream = ScriptedStream(reply("", calls=[("t1", "boom", {"value": "x"})]), reply("ok"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [FunctionTool("boom", "fails", Value, boom)]
    await agent.prompt("go")
    assert of(ToolResultMessage, agent.state.messages[2]).is_error and first_text(agent.state.messages[2]) == "disk gone"


async def test_error_assistant_does_not_run_its_tool_calls() -> None:
    started: list[str] = []
    stream = ScriptedStream(reply("", calls=[("t1", "echo", {"value": "a"})], stop="error", error="cut"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [echo_tool(started=started)]
    await agent.prompt("go")
    assert started == [] and assistant_of(agent.state.messages[-1]).stop_reason == "error"


async def test_continue_from_user_yields_one_assistant() -> None:
    agent = Agent(stream_fn=ScriptedStream(reply("a")))
    agent.state.messages = [UserMessage(content="q")]
    rec = Recorder()
    agent.subscribe(rec)
    await agent.continue_()
    assert rec.types.count("message_end") == 1
    assert rec.named("agent_end")[0].messages[0].role == "assistant"


async def test_continue_with_custom_last_message_is_allowed() -> None:
    stream = ScriptedStream(reply("a"))
    agent = Agent(stream_fn=stream)
    agent.state.messages = [CustomMessage(custom_type="x", content="hello")]
    await agent.continue_()
    assert texts(stream.contexts[0].messages) == ["user:hello"]
