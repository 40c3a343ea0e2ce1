"""Attachments and the system prompt on the wire, through print mode and the loopback fake
provider: `@file` and `-a` in OpenAI and Anthropic request bodies, a text-only model getting a
placeholder instead of the image (told once, the stored entry keeps the image)."""

from __future__ import annotations

import base64
import json

import pytest

from tests.fake_provider import FakeProvider
from tests.images import png_bytes, write
from tests.narrow import of
from tests.print_helper import print_run
from treechat.agent.convert import IMAGE_PLACEHOLDER, replace_images
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import ImageContent, TextContent, ToolResultMessage, UserMessage

CONFIG = """
[providers.local]
base_url = "{url}/v1"
api = "openai"
models = [{{ id = "text-only", input = ["text"], context_window = 8192 }}, {{ id = "vision", input = ["text", "image"] }}]

[providers.localclaude]
base_url = "{url}"
api = "anthropic"
models = [{{ id = "text-only", input = ["text"] }}]
"""


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
def setup(fake, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('system_prompt = "Answer briefly."\n' + CONFIG.format(url=fake.base_url))
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "AGENTS.md").write_text("Run the tests with pytest.")
    (work / "notes.txt").write_text("the milk is in the fridge\n")
    write(work / "shot.png", png_bytes(3, 2))
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k", "ANTHROPIC_BASE_URL": fake.base_url,
           "ANTHROPIC_API_KEY": "k"}
    settings = load_settings(home, env=env)
    return settings, work, ModelRegistry(settings)


async def run(setup, prompt, model, **kw):
    settings, work, registry = setup
    session = kw.pop("session", None) or await Session.open(await MemoryCatalog().create())
    return await print_run(prompt, session, model_ref=model, registry=registry, settings=settings, cwd=str(work),
                           **kw)


def reply(fake, api):
    (fake.script_openai if api == "openai" else fake.script_anthropic)(["ok"])


def user_blocks(body, api):
    last = body["messages"][-1]
    assert last["role"] == "user"
    return last["content"]


@pytest.mark.parametrize("api,model", [("openai", "openai/gpt-4.1"), ("anthropic", "anthropic/claude-sonnet-4-5")])
async def test_file_and_image_attachments_on_both_wire_formats(fake, setup, api, model) -> None:
    reply(fake, api)
    code, out, err, session = await run(setup, "what about @notes.txt?", model, attach=["shot.png"],
                                        system="Use metric units.", tools="read")
    assert (code, out) == (0, "ok\n"), err
    body = fake.requests[0].body
    system = body["messages"][0]["content"] if api == "openai" else body["system"]
    if api == "openai":
        assert body["messages"][0]["role"] == "system"
    for part in ("You are the assistant in treechat", "- read: Read a text file", "Answer briefly.",
                 "Use metric units.", "Run the tests with pytest.", f"- Working folder: {setup[1]}"):
        assert part in system
    blocks = user_blocks(body, api)
    text = blocks[0]["text"]
    assert text.startswith("what about notes.txt?\n\n") and '<file path="notes.txt">\nthe milk is in the fridge\n</file>' in text
    data = base64.b64encode(png_bytes(3, 2)).decode()
    if api == "openai":
        assert blocks[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    else:
        assert blocks[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    stored = (await session.build_session_context()).messages[0]
    assert isinstance(stored.content[1], ImageContent) and stored.content[1].data == data


@pytest.mark.parametrize("api,model", [("openai", "local/text-only"), ("anthropic", "localclaude/text-only")])
async def test_a_text_only_model_gets_a_placeholder_and_the_entry_keeps_the_image(fake, setup, api, model) -> None:
    reply(fake, api)
    reply(fake, api)
    code, out, err, session = await run(setup, "describe @shot.png", model)
    assert code == 0, err
    assert err.count("cannot see images") == 1 and "1 image was sent as a short note" in err
    sent = json.dumps(fake.requests[0].body)
    assert "image_url" not in sent and '"image"' not in sent and base64.b64encode(png_bytes(3, 2)).decode() not in sent
    blocks = user_blocks(fake.requests[0].body, api)
    if api == "openai":  # text only: one string (servers' chat templates concatenate content)
        assert isinstance(blocks, str) and blocks.endswith("\n" + IMAGE_PLACEHOLDER)
    else:
        assert [b["type"] for b in blocks] == ["text", "text"] and blocks[1]["text"] == IMAGE_PLACEHOLDER
    stored = (await session.build_session_context()).messages[0]
    assert [type(b) for b in stored.content] == [TextContent, ImageContent]

    # the next request in the same process still carries the note (the history has the image)
    code, _, err, _ = await run(setup, "and now?", model, session=session)
    assert code == 0 and IMAGE_PLACEHOLDER in json.dumps(fake.requests[1].body)


async def test_a_vision_model_declared_in_config_gets_the_image(fake, setup) -> None:
    reply(fake, "openai")
    code, _, err, _ = await run(setup, "describe @shot.png", "local/vision", tools="")  # (a 4k window: no room for tools)
    assert code == 0 and err == ""
    assert "image_url" in json.dumps(fake.requests[0].body)


async def test_an_attachment_that_cannot_be_read_sends_nothing(fake, setup) -> None:
    code, out, err, session = await run(setup, "look", "openai/gpt-4.1", attach=["nope.png"])
    assert (code, out, err) == (2, "", "treechat: nope.png: no such file.\n")
    assert fake.requests == [] and (await session.build_session_context()).messages == []


def test_placeholders_replace_images_in_user_and_tool_messages_and_collapse() -> None:
    img = ImageContent(data="AAAA", mime_type="image/png")
    user = UserMessage(content=[TextContent(text="two"), img, img])
    tool = ToolResultMessage(tool_call_id="c", tool_name="read", content=[img])
    out, count = replace_images([user, tool])
    assert count == 3
    assert [of(TextContent, b).text for b in of(UserMessage, out[0]).content] == ["two", IMAGE_PLACEHOLDER]
    assert [of(TextContent, b).text for b in of(ToolResultMessage, out[1]).content] == [IMAGE_PLACEHOLDER]
    assert user.content[1] is img  # the originals are untouched
    assert replace_images([UserMessage(content="plain")])[1] == 0


async def test_the_agent_tells_once_per_model(fake) -> None:
    from treechat.agent.agent import Agent
    from treechat.agent.state import AgentState
    from treechat.llm.types import ModelInfo

    text_only = ModelInfo(id="t", provider="openai", api="openai", base_url=fake.base_url, input=("text",))
    agent = Agent(state=AgentState(model=text_only), get_api_key=lambda p: "k")
    seen: list = []
    agent.subscribe(lambda event: seen.append(event) if event.type == "images_replaced" else None)
    img = ImageContent(data=base64.b64encode(png_bytes()).decode(), mime_type="image/png")
    for _ in range(2):
        fake.script_openai(["ok"])
        await agent.prompt("look", [img])
    assert [(e.model, e.count) for e in seen] == [("openai/t", 1)]
    assert of(UserMessage, agent.state.messages[0]).content[1] == img


async def test_the_system_prompt_lists_the_tools_active_on_the_path(fake, setup) -> None:
    session = await Session.open(await MemoryCatalog().create())
    await session.append_active_tools_change(["ls"])  # an earlier run narrowed the tools
    reply(fake, "openai")
    code, _, err, _ = await run(setup, "hi", "openai/gpt-4.1", tools="read,ls", session=session)
    assert code == 0, err
    system = fake.requests[0].body["messages"][0]["content"]
    assert "- ls:" in system and "- read:" not in system
    assert [t["function"]["name"] for t in fake.requests[0].body["tools"]] == ["ls"]
