"""Tool-call arguments a model wrote that are not a JSON object: through the real adapters on the
loopback fake, the loop answers the call with an error result naming the text (the tool never
runs), the next request shows the model its own text, and the stored call keeps it."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from tests.fake_provider import FakeProvider
from tests.narrow import assistant_of, first_text
from treechat.agent import Agent, AgentState, FunctionTool, text_result
from treechat.llm.types import Api, ModelInfo
from treechat.storage.model import AssistantMessage, ToolCall, ToolResultMessage, dump


class Path(BaseModel):
    path: str


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def _agent(fake: FakeProvider, api: Api, ran: list[str]) -> Agent:
    model = ModelInfo(id="m", provider=api, api=api, base_url=fake.base_url)
    agent = Agent(state=AgentState(model=model), get_api_key=lambda provider: "k")

    async def read(args: Path, signal, on_update):
        ran.append(args.path)
        return text_result("contents")

    agent.state.tools = [FunctionTool("read", "Read a file", Path, read)]
    return agent


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_arguments_that_are_not_json_become_an_error_the_model_sees(fake, api) -> None:
    broken = '{"path": "a.txt"'  # the model stopped before the closing brace
    call = {"id": "c1", "name": "read", "arguments": [broken]}
    if api == "openai":
        fake.script_openai(tool_calls=[call])
        fake.script_openai(["sorry"])
    else:
        fake.script_anthropic(tool_calls=[call])
        fake.script_anthropic(["sorry"])
    ran: list[str] = []
    agent = _agent(fake, api, ran)
    await agent.prompt("read a.txt")

    assistant, result = agent.state.messages[1], agent.state.messages[2]
    assert isinstance(assistant, AssistantMessage) and isinstance(result, ToolResultMessage)
    assert ran == []  # the tool never ran on a guess
    assert result.is_error and first_text(result) == f'The arguments for tool "read" were not valid JSON: {broken}'
    stored = next(b for b in assistant.content if isinstance(b, ToolCall))
    assert stored.arguments_error is not None and "argumentsError" not in dump(stored)  # never persisted
    assert broken in str(dump(stored)["arguments"])  # the session keeps what the model wrote
    assert first_text(agent.state.messages[-1]) == "sorry" and len(fake.requests) == 2


async def test_valid_arguments_carry_no_error(fake) -> None:
    fake.script_openai(tool_calls=[{"id": "c1", "name": "read", "arguments": ['{"path": ', '"a.txt"}']}])
    fake.script_openai(["done"])
    ran: list[str] = []
    agent = _agent(fake, "openai", ran)
    await agent.prompt("read a.txt")
    stored = next(b for b in assistant_of(agent.state.messages[1]).content if isinstance(b, ToolCall))
    assert stored.arguments == {"path": "a.txt"} and stored.arguments_error is None and ran == ["a.txt"]
