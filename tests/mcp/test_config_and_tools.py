"""The MCP settings (strict config.toml, Claude Code's .mcp.json), the tool set a path records,
and what a result becomes on the wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.scripted import ScriptedStream, reply
from tests.agent.test_loop import echo_tool
from tests.narrow import of
from treechat.config.settings import ConfigError, parse_config
from treechat.llm.openai import build_body
from treechat.llm.types import LlmContext, LlmMessage, ModelInfo, StreamOptions
from treechat.mcp.config import MissingVariable, expand, find_project_file, read_project_servers
from treechat.session.agent_session import AgentSession
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import ActiveToolsChangeEntry, ImageContent, MessageEntry, TextContent, ToolResultMessage

MODEL = ModelInfo(id="fake-model", provider="openai", api="openai")


def problem(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "config.toml")
    return str(caught.value)


def test_config_tables_are_strict_with_one_line_per_problem() -> None:
    assert problem('[mcp_servers.time]\ncomand = "x"\n') == (
        "config.toml, line 2: unknown key 'comand' (did you mean 'command'?).")
    assert problem('[mcp_servers.time]\nargs = ["x"]\n') == (
        "config.toml, line 1: mcp_servers.time needs command (a program to run, e.g. command = "
        '"mcp-server-time") or url (an HTTP server, e.g. url = "http://127.0.0.1:8000/mcp").')
    assert problem('[mcp_servers.h]\ncommand = "x"\nheaders = { A = "b" }\n') == (
        "config.toml, line 1: mcp_servers.h gives headers with a command: headers are for an HTTP server (url).")
    assert problem('[mcp_servers.w]\nurl = "ftp://host/mcp"\n') == (
        "config.toml, line 1: mcp_servers.w url needs http:// or https://, not ftp://.")
    assert problem('[mcp_servers."a b"]\ncommand = "x"\n').startswith(
        "config.toml: mcp_servers has a server named 'a b': use letters, digits, - and _")
    assert problem('mcp_timeout = 0\n') == "config.toml, line 1: mcp_timeout should be greater than 0."
    ok = parse_config('[mcp_servers.t]\ncommand = "x"\nenabled = false\ntrust = true\ntimeout = 5\n')
    assert ok.mcp_servers["t"].enabled is False and ok.mcp_servers["t"].trust and ok.mcp_servers["t"].timeout == 5


def test_variables_are_filled_in_from_the_environment() -> None:
    assert expand("Bearer ${TOKEN}", {"TOKEN": "t"}, "header A") == "Bearer t"
    assert expand("${MISSING:-fallback}/x", {}, "url") == "fallback/x"
    with pytest.raises(MissingVariable, match=r"header A names \$\{TOKEN\}, which is not set"):
        expand("Bearer ${TOKEN}", {}, "header A")


def test_a_projects_mcp_json_is_read_as_claude_code_writes_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "src" / "deep"
    sub.mkdir(parents=True)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files"], "env": {"ROOT": "${PWD}"}},
        "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${KEY}"}},
        "old": {"type": "sse", "url": "https://example.com/sse"},
        "odd name!": {"command": "x", "args": "not a list"},
    }}))
    path = find_project_file(sub)
    assert path == tmp_path / ".mcp.json"
    found = read_project_servers(path, 60)
    assert [(s.name, s.config.kind) for s in found.servers] == [("files", "stdio"), ("api", "http")]
    assert found.problems == [
        f"{path}: server 'old' uses the old SSE transport, which treechat does not speak; use its streamable "
        "HTTP URL.",
        f"{path}: server 'odd name!': args input should be a valid list.",
    ]
    before = found.digest
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"files": {"command": "npx"}}}))
    assert read_project_servers(path, 60).digest != before  # a changed file is a new question
    (tmp_path / ".mcp.json").write_text("{not json")
    assert "cannot be read as JSON" in read_project_servers(path, 60).problems[0]


class ServerTool:
    """Stands for an MCP server's tool: kept on every path, whatever the path recorded."""

    def __init__(self, name: str) -> None:
        self.tool = echo_tool(name)
        self.tool.kept_on_every_path = True


async def test_the_path_records_the_tool_set_before_the_request_that_carries_it() -> None:
    session = await Session.open(await MemoryCatalog().create())
    read = echo_tool("read")
    stream = ScriptedStream(reply("one"), reply("two"), reply("three"))
    agent = await AgentSession.create(session, model=MODEL, tools=[read], stream_fn=stream)
    await agent.prompt("first")
    time_tool = ServerTool("time__now").tool
    agent.offer_tools([read, time_tool])  # a server became ready
    assert (await session.build_session_context()).active_tool_names == ["read"]  # nothing written yet
    await agent.prompt("second")
    agent.offer_tools([read])  # its server stopped
    await agent.prompt("third")
    entries = [e for e in await session.get_branch() if e.type in ("active_tools_change", "message")]
    shape = [e.active_tool_names if isinstance(e, ActiveToolsChangeEntry) else of(MessageEntry, e).message.role
             for e in entries]
    assert shape == [["read"], "user", "assistant", ["read", "time__now"], "user", "assistant", ["read"], "user",
                     "assistant"]
    # an old record that lacks a server's tool never takes it away; built-in tools it lacks stay off
    agent.offer_tools([read, echo_tool("grep"), time_tool])
    await agent.reload()
    assert [t.name for t in agent.state.tools] == ["read", "time__now"]


def test_images_in_a_tool_result_follow_it_as_a_user_message_for_chat_completions() -> None:
    from treechat.storage.model import AssistantMessage, ToolCall, UserMessage

    image = ImageContent(data="aGk=", mime_type="image/png")
    messages: list[LlmMessage] = [UserMessage(content=[TextContent(text="look")]),
                AssistantMessage(content=[ToolCall(id="c1", name="shot", arguments={}),
                                          ToolCall(id="c2", name="other", arguments={})]),
                ToolResultMessage(tool_call_id="c1", tool_name="shot", content=[image]),
                ToolResultMessage(tool_call_id="c2", tool_name="other", content=[TextContent(text="ok")])]
    body: dict = build_body(MODEL, LlmContext("", messages, []), StreamOptions())  # (JSON: read as it was built)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "user"]  # after every tool message of the turn
    assert body["messages"][2]["content"] == "(see attached image)"
    assert body["messages"][4]["content"] == [
        {"type": "text", "text": "Attached image(s) from tool result:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}]
