"""Tools on by default (issue 37): which tools a request carries, through `Chat` against the
loopback fake: config.toml's `tools` (all seven unless it names fewer), `/tools` (`set_tool`,
`set_tools`) for the open session, the path's record on reopening, the status's count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider
from treechat.agent.tools import BUILTIN_TOOLS
from treechat.chat import Chat, ChatError
from treechat.chat.tool_set import Named, ToolChoice
from treechat.config.settings import DEFAULT_TOOLS, load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.storage.base import SessionCatalog
from treechat.storage.model import ActiveToolsChangeEntry, AssistantMessage, TextContent, UserMessage

SEVEN = ["read", "ls", "grep", "bash", "edit", "write", "task"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
async def catalog(tmp_path: Path) -> AsyncIterator[SessionCatalog]:
    found = await open_catalog("sqlite", tmp_path / "home")
    yield found
    await found.close()


def chat_for(catalog: SessionCatalog, fake: FakeProvider, tmp_path: Path, config: str = "", **kw: Any) -> Chat:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if config:
        (home / "config.toml").write_text(config)
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(home, env=env)
    return Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/fake-model", cwd=str(tmp_path), local_servers=(), **kw)


def sent_tools(fake: FakeProvider, index: int = -1) -> list[str]:
    return [t["function"]["name"] for t in fake.requests[index].body.get("tools", [])]


async def send(chat: Chat, fake: FakeProvider, text: str = "hi") -> None:
    fake.script_openai(["ok"])
    await chat.send(text)
    await chat.wait_idle()


def test_the_default_is_every_built_in_tool() -> None:
    assert list(DEFAULT_TOOLS) == list(BUILTIN_TOOLS) == SEVEN  # (settings spell them out: they load first)


async def test_a_fresh_home_sends_all_seven_tools_and_the_status_counts_them(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    assert chat.status().tools == tuple(SEVEN)  # before any agent: what the first request will carry
    await send(chat, fake)
    assert sent_tools(fake) == SEVEN
    assert "bash" in fake.requests[-1].body["messages"][0]["content"]  # the system prompt lists them
    assert chat.status().tools == tuple(SEVEN)
    await chat.close()


async def test_tools_empty_in_config_turns_them_all_off(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path, "tools = []\n")
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    assert chat.status().tools == ()
    await send(chat, fake)
    assert "tools" not in fake.requests[-1].body
    assert "No tools are enabled" in fake.requests[-1].body["messages"][0]["content"]
    await chat.close()


async def test_a_tool_turned_off_is_gone_from_the_next_request_and_after_reopening(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    storage = await catalog.create(cwd=str(tmp_path))
    await chat.open(storage)
    await send(chat, fake)
    assert await chat.set_tool("bash", False) == ["read", "ls", "grep", "edit", "write", "task"]
    assert [r.name for r in chat.tools() if not r.on] == ["bash"]
    await send(chat, fake, "again")
    assert sent_tools(fake) == ["read", "ls", "grep", "edit", "write", "task"]
    assert "run a shell" not in fake.requests[-1].body["messages"][0]["content"]  # nor does the prompt name it
    await chat.close()

    reopened = chat_for(catalog, fake, tmp_path)
    await reopened.open(await catalog.open(storage.session_id))
    assert "bash" not in reopened.status().tools
    await send(reopened, fake, "and again")
    assert sent_tools(fake) == ["read", "ls", "grep", "edit", "write", "task"]
    await reopened.close()


async def test_a_toggle_before_any_message_is_kept_with_a_session_that_has_one(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    storage = await catalog.create(cwd=str(tmp_path))
    await chat.open(storage)
    await send(chat, fake)
    await chat.close()
    reopened = chat_for(catalog, fake, tmp_path)
    await reopened.open(await catalog.open(storage.session_id))
    await reopened.set_tools(["read", "ls"])  # no agent yet: the path records it at once
    assert reopened.agent is None and reopened.status().tools == ("read", "ls")
    await reopened.close()
    again = chat_for(catalog, fake, tmp_path)
    await again.open(await catalog.open(storage.session_id))
    assert again.status().tools == ("read", "ls")
    await send(again, fake, "go")
    assert sent_tools(fake) == ["read", "ls"]
    await again.close()


async def test_a_tool_config_leaves_out_can_be_turned_on_for_the_open_session(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path, 'tools = ["read"]\n')
    storage = await catalog.create(cwd=str(tmp_path))
    await chat.open(storage)
    await send(chat, fake)
    assert sent_tools(fake) == ["read"]
    await chat.set_tool("bash", True)
    await send(chat, fake, "now run something")
    assert sent_tools(fake) == ["read", "bash"]
    await chat.close()
    # reopened, config.toml has the last word on what a session starts with (docs/agent.md says so)
    reopened = chat_for(catalog, fake, tmp_path, 'tools = ["read"]\n')
    await reopened.open(await catalog.open(storage.session_id))
    assert reopened.status().tools == ("read",)
    await reopened.close()


async def test_all_and_unknown_names(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    assert await chat.set_tool("all", False) == []
    assert chat.status().tools == ()
    assert await chat.set_tool("all", True) == SEVEN
    with pytest.raises(ChatError, match="No tool 'bsh': the tools are read, ls, grep, bash, edit, write"):
        await chat.set_tool("bsh", False)
    await chat.close()


async def test_the_path_records_the_set_each_request_carried(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    await send(chat, fake)
    await chat.set_tool("write", False)
    await send(chat, fake, "again")
    records = [e.active_tool_names for e in await chat.session.get_branch() if isinstance(e, ActiveToolsChangeEntry)]
    assert records == [SEVEN, ["read", "ls", "grep", "bash", "edit", "task"]]
    await chat.close()


def test_an_mcp_tool_turned_off_stays_off_whatever_the_path_recorded() -> None:
    choice = ToolChoice(["read"])
    tools = [Named("read"), Named("bash"), Named("time__now", kept_on_every_path=True)]
    assert [t.name for t in choice.offered(tools, None)] == ["read", "time__now"]
    assert [t.name for t in choice.offered(tools, ["read"])] == ["read", "time__now"]  # a server's tools stay
    choice.turn("time__now", False)
    choice.turn("bash", True)
    assert [t.name for t in choice.offered(tools, ["read"])] == ["read", "bash"]  # on whatever the record says
    choice.reset()
    assert [t.name for t in choice.offered(tools, [])] == ["time__now"]


async def test_what_tools_changed_stays_with_its_session(catalog, fake, tmp_path) -> None:
    chat = chat_for(catalog, fake, tmp_path)
    await chat.open(await catalog.create(cwd=str(tmp_path)))
    await send(chat, fake)
    await chat.set_tool("bash", False)
    await chat.new_session()
    assert chat.status().tools == tuple(SEVEN)
    await send(chat, fake, "in the new one")
    assert sent_tools(fake) == SEVEN
    await chat.close()


async def test_a_path_without_a_record_gets_one_only_when_the_person_chooses(catalog, fake, tmp_path) -> None:
    """A Pi session (or an older one) has no record: its first request writes none, so an edit and
    resend stays a sibling; a choice made with /tools is recorded and kept."""
    storage = await catalog.create(cwd=str(tmp_path))
    chat = chat_for(catalog, fake, tmp_path)
    await chat.open(storage)
    await chat.session.append_message(UserMessage(content="q1"))
    await chat.session.append_message(AssistantMessage(content=[TextContent(text="a1")], provider="openai",
                                                       model="fake-model"))
    await send(chat, fake, "q2")
    assert sent_tools(fake) == SEVEN
    assert not [e for e in await chat.session.get_branch() if isinstance(e, ActiveToolsChangeEntry)]
    await chat.set_tool("bash", False)
    await chat.close()
    reopened = chat_for(catalog, fake, tmp_path)
    await reopened.open(await catalog.open(storage.session_id))
    assert "bash" not in reopened.status().tools
    await reopened.close()
