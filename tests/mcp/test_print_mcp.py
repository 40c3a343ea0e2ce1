"""MCP in `-p` and `treechat mcp`, through the real command line against the loopback fake
provider: a model's call of time__get_current_time reaches the real mcp-server-time and its
answer goes back to the model; the path records the tool set; a broken server is one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider

from .helpers import FAKE, time_server, treechat


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def tokyo_call(fp: FakeProvider) -> None:
    fp.script_openai(tool_calls=[{"id": "c1", "name": "time__get_current_time",
                                  "arguments": '{"timezone": "Asia/Tokyo"}'}])
    fp.script_openai(["It is late in Tokyo."])


async def test_a_model_calls_the_time_server_in_print_mode(fake, tmp_path) -> None:
    home = tmp_path / "home"
    write_config(home, f'tools = []  # the server\'s tools alone\n[mcp_servers.time]\ncommand = "{time_server()}"\n')
    tokyo_call(fake)
    code, out, err = await treechat(home, "-p", "What time is it in Tokyo?", "--yes", "--model", "openai/fake-model",
                                    fp=fake, process=True)
    assert code == 0, err
    assert out == "It is late in Tokyo.\n"
    first, second = fake.requests[0].body, fake.requests[1].body
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(tools) == {"time__get_current_time", "time__convert_time"}
    assert tools["time__get_current_time"]["parameters"]["required"] == ["timezone"]
    answer = next(m for m in second["messages"] if m["role"] == "tool")
    assert json.loads(answer["content"])["timezone"] == "Asia/Tokyo"  # the real server's answer
    assert "time__get_current_time" in first["messages"][0]["content"]  # and the system prompt names it
    # the path records the tool set the request carried, once
    code, tree, err = await treechat(home, "tree", _session(err), "--json")
    entries = json.loads(tree)["entries"]
    changes = [e for e in entries if e["type"] == "active_tools_change"]
    assert [c["activeToolNames"] for c in changes] == [["time__get_current_time", "time__convert_time"]]


async def test_without_yes_an_untrusted_server_is_not_called(fake, tmp_path) -> None:
    home = tmp_path / "home"
    write_config(home, f'[mcp_servers.time]\ncommand = "{time_server()}"\n')
    tokyo_call(fake)
    code, out, err = await treechat(home, "-p", "Tokyo?", "--model", "openai/fake-model", fp=fake)
    assert code == 0, err
    refused = next(m for m in fake.requests[1].body["messages"] if m["role"] == "tool")
    assert "need confirmation" in refused["content"] and "--yes" in refused["content"]
    # trust = true: no confirmation needed
    write_config(home, f'[mcp_servers.time]\ncommand = "{time_server()}"\ntrust = true\n')
    tokyo_call(fake)
    code, out, err = await treechat(home, "-p", "Tokyo?", "--model", "openai/fake-model", fp=fake)
    answer = next(m for m in fake.requests[3].body["messages"] if m["role"] == "tool")
    assert code == 0 and json.loads(answer["content"])["timezone"] == "Asia/Tokyo"


async def test_a_server_that_cannot_start_costs_one_line_and_the_prompt_goes_on(fake, tmp_path) -> None:
    home = tmp_path / "home"
    write_config(home, 'tools = []\n[mcp_servers.gone]\ncommand = "treechat-no-such-server"\n'
                       f'[mcp_servers.broken]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "--crash-at-start"]\n')
    fake.script_openai(["fine"])
    code, out, err = await treechat(home, "-p", "hi", "--model", "openai/fake-model", fp=fake)
    assert code == 0 and out == "fine\n"
    lines = [line for line in err.splitlines() if "MCP server" in line]
    assert sorted(lines) == [
        "treechat: MCP server 'broken' could not start: exited with status 1 (it said: ModuleNotFoundError: No "
        "module named 'missing_dep').",
        "treechat: MCP server 'gone' could not start: cannot start 'treechat-no-such-server': no such program (is "
        "it installed and on PATH?).",
    ]
    assert "tools" not in fake.requests[0].body


async def test_a_projects_mcp_json_starts_only_when_trusted(fake, tmp_path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    write_config(home, "tools = []  # the server's tools alone\n")
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": sys.executable, "args": [FAKE]}}}))
    fake.script_openai(["one"])
    code, _, err = await treechat(home, "-p", "hi", "--model", "openai/fake-model", fp=fake, cwd=project)
    assert code == 0
    assert "lists MCP servers (proj) that are not trusted yet; they are not started" in err
    assert "tools" not in fake.requests[0].body
    fake.script_openai(["two"])
    code, _, err = await treechat(home, "-p", "hi", "--project-mcp", "--model", "openai/fake-model", fp=fake,
                                  cwd=project)
    assert code == 0 and "they are not started" not in err
    assert "because of --project-mcp" in err and f"      runs: {sys.executable} {FAKE}\n" in err  # what it starts
    assert "proj__echo" in {t["function"]["name"] for t in fake.requests[1].body["tools"]}


async def test_treechat_mcp_lists_each_server(tmp_path) -> None:
    home = tmp_path / "home"
    write_config(home, f'[mcp_servers.time]\ncommand = "{time_server()}"\n'
                       '[mcp_servers.gone]\ncommand = "treechat-no-such-server"\n'
                       '[mcp_servers.off]\ncommand = "x"\nenabled = false\n')
    code, out, err = await treechat(home, "mcp")
    assert code == 1, err  # one enabled server could not start
    assert out.splitlines()[:2] == [f"✓ time  ready  {time_server()}  (config.toml)",
                                    "    2 tools: time__get_current_time, time__convert_time"]
    assert "✗ gone  failed  treechat-no-such-server  (config.toml)" in out
    assert "last error: cannot start 'treechat-no-such-server': no such program" in out
    assert "· off   disabled  x  (config.toml)" in out
    code, out, _ = await treechat(home, "mcp", "--json")
    rows = {r["name"]: r for r in json.loads(out)["servers"]}
    assert rows["time"]["tools"] == ["time__get_current_time", "time__convert_time"]
    assert rows["gone"]["state"] == "failed" and rows["off"]["state"] == "disabled"


async def test_a_bad_mcp_table_is_one_line(tmp_path) -> None:
    home = tmp_path / "home"
    write_config(home, '[mcp_servers.web]\nurl = "http://127.0.0.1:1/mcp"\ncommand = "x"\n')
    code, out, err = await treechat(home, "mcp")
    assert code == 1 and out == ""
    assert err == (f"treechat: {home / 'config.toml'}, line 1: mcp_servers.web gives both command and url: a server "
                   "is a program to run (command) or an HTTP server (url), not both.\n")


def _session(err: str) -> str:
    line = next(line for line in err.splitlines() if line.startswith("treechat: session "))
    return line.split()[2]


async def test_print_mode_waits_for_the_servers_at_once_and_only_as_long_as_mcp_startup_wait(fake, tmp_path) -> None:
    """Servers start side by side; one that has not answered after mcp_startup_wait seconds does
    not hold the prompt (issue 37: -p waited for every server, even one never used)."""
    home = tmp_path / "home"
    write_config(home, "mcp_startup_wait = 5\n"
                       f'[mcp_servers.quick]\ncommand = "{sys.executable}"\nargs = ["{FAKE}"]\ntrust = true\n'
                       f'[mcp_servers.stuck]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "--silent"]\n'
                       "startup_timeout = 60\n")
    fake.script_openai(["done without it"])
    code, out, err = await treechat(home, "-p", "hi", "--model", "openai/fake-model", fp=fake)
    assert code == 0, err
    assert out == "done without it\n"
    assert "MCP server stuck still starting after 5 s" in err and "mcp_startup_wait" in err
    names = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
    assert "quick__echo" in names and not any(n.startswith("stuck__") for n in names)
