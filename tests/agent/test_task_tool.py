"""The task tool in the agent core: its shape, what it does with no one to run a child, and
the loop carrying a tool's spending (`ToolResult.usage`) into the stored result."""

from __future__ import annotations

import asyncio

from treechat.agent import Agent
from treechat.agent.asker import Asker, asking_as, current_asker
from treechat.agent.tools import BUILTIN_TOOLS, TaskArgs, TaskTool, make_tools
from treechat.agent.tools.task import NO_SUBAGENTS
from treechat.agent.types import ToolResult
from treechat.llm.abort import AbortSignal
from treechat.storage.model import Cost, MessageEntry, TextContent, ToolResultMessage, Usage, dump

from .scripted import ScriptedStream, reply


async def nothing(_: ToolResult) -> None:
    return None


def test_the_task_tool_has_claude_codes_shape_and_is_built_in() -> None:
    assert "task" in BUILTIN_TOOLS
    tool = make_tools(["task"])[0]
    assert isinstance(tool, TaskTool) and tool.execution_mode == "parallel" and tool.timeout is None
    schema = tool.parameters
    assert schema["required"] == ["description", "prompt"]


async def test_without_a_way_to_run_a_child_the_call_says_so() -> None:
    result = await TaskTool(None).execute("t1", TaskArgs(description="d", prompt="p"), None, nothing)
    assert result.is_error and result.content == [TextContent(text=NO_SUBAGENTS)]


async def test_a_tools_spending_reaches_its_stored_result() -> None:
    spent = Usage(input=5, output=2, total_tokens=7, cost=Cost(total=0.01))

    async def spawn(call_id: str, args: TaskArgs, signal: AbortSignal | None, on_update) -> ToolResult:
        return ToolResult([TextContent(text=f"did {args.description}")], {"childSessionId": "c"}, usage=spent)

    stream = ScriptedStream(reply("", calls=[("t1", "task", {"description": "x", "prompt": "y"})]), reply("ok"))
    agent = Agent(stream_fn=stream)
    agent.state.tools = [TaskTool(spawn)]
    await agent.prompt("go")
    result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    assert result.usage == spent and result.details == {"childSessionId": "c"}
    plain = MessageEntry(id="r", parent_id=None, message=ToolResultMessage(tool_call_id="c", tool_name="read"))
    message = dump(plain)["message"]
    assert isinstance(message, dict) and "usage" not in message  # a tool that spent nothing writes what Pi writes


async def test_who_asks_follows_the_child_into_the_tasks_it_starts() -> None:
    seen: list[str | None] = []

    async def ask() -> None:
        who = current_asker()
        seen.append(who.title if who else None)

    with asking_as(Asker("fix the tests", "s1")):
        await asyncio.create_task(ask())
    await ask()
    assert seen == ["task 'fix the tests'", None]
    assert Asker("x " * 60, "s").title.endswith("…'")
