"""Every RPC command's response (Pi 0.73.1's commands, docs/rpc.md), on the in-process server."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from tests.images import png_bytes
from treechat.protocols.rpc.commands import COMMAND_TYPES
from treechat.storage.memory import MemoryCatalog

from .conversations import USAGE
from .driver import Driver
from .helpers import Place, in_process

# Pi 0.73.1's RpcCommand types (dist/modes/rpc/rpc-types.d.ts), and treechat's tree commands
PI_COMMANDS = {"prompt", "steer", "follow_up", "abort", "new_session", "get_state", "set_model", "cycle_model",
               "get_available_models", "set_thinking_level", "cycle_thinking_level", "set_steering_mode",
               "set_follow_up_mode", "compact", "set_auto_compaction", "set_auto_retry", "abort_retry", "bash",
               "abort_bash", "get_session_stats", "export_html", "switch_session", "fork", "clone",
               "get_fork_messages", "get_last_assistant_text", "set_session_name", "get_messages", "get_commands"}


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
async def rpc(fake, tmp_path):
    place = Place.make(tmp_path, fake, reasoning=True, extra="[compaction]\nkeep_recent_tokens = 1")
    driver, server = await in_process(place, MemoryCatalog())
    driver.place = place  # type: ignore[attr-defined]
    driver.server = server  # type: ignore[attr-defined]
    yield driver
    await driver.close()


async def ask(d: Driver, prompt: str, reply: str, fp: FakeProvider) -> None:
    fp.script_openai([reply], usage=USAGE)
    ends = len(d.of("agent_end"))
    assert (await d.call({"type": "prompt", "message": prompt}))["success"]
    await d.until("agent_end", ends + 1)


def data(response: dict) -> object:
    assert response["success"], response
    return response.get("data")


def test_every_command_of_pi_is_known() -> None:
    assert PI_COMMANDS | {"get_tree", "move_to", "label"} == COMMAND_TYPES


async def test_state_messages_and_stats_after_a_prompt(rpc, fake) -> None:
    await ask(rpc, "hi", "Hello", fake)
    state = data(await rpc.call({"type": "get_state"}))
    assert isinstance(state, dict)
    assert state["model"]["id"] == "fake-model" and state["model"]["api"] == "openai-completions"
    assert (state["thinkingLevel"], state["isStreaming"], state["isCompacting"], state["messageCount"],
            state["pendingMessageCount"], state["steeringMode"], state["followUpMode"]) == (
        "off", False, False, 2, 0, "one-at-a-time", "one-at-a-time")
    assert state["sessionId"] == rpc.server.chat.session_id and "sessionName" not in state
    messages = data(await rpc.call({"type": "get_messages"}))["messages"]  # type: ignore[index]
    assert [(m["role"], m["content"][0]["text"]) for m in messages] == [("user", "hi"), ("assistant", "Hello")]
    assert data(await rpc.call({"type": "get_last_assistant_text"})) == {"text": "Hello"}
    stats = data(await rpc.call({"type": "get_session_stats"}))
    assert isinstance(stats, dict)
    assert (stats["userMessages"], stats["assistantMessages"], stats["totalMessages"], stats["tokens"]["input"],
            stats["tokens"]["output"], stats["tokens"]["total"]) == (1, 1, 2, 10, 2, 12)
    assert stats["contextUsage"]["tokens"] == 12
    forks = data(await rpc.call({"type": "get_fork_messages"}))["messages"]  # type: ignore[index]
    assert [f["text"] for f in forks] == ["hi"]


async def test_nothing_yet(rpc) -> None:
    assert data(await rpc.call({"type": "get_messages"})) == {"messages": []}
    assert data(await rpc.call({"type": "get_last_assistant_text"})) == {"text": None}
    assert data(await rpc.call({"type": "get_fork_messages"})) == {"messages": []}
    assert data(await rpc.call({"type": "get_commands"})) == {"commands": []}
    response = await rpc.call({"type": "export_html"})
    assert response["error"] == "Nothing to export yet - start a conversation first"


async def test_models_and_thinking(rpc) -> None:
    models = data(await rpc.call({"type": "get_available_models"}))["models"]  # type: ignore[index]
    assert [m["id"] for m in models] == ["fake-model", "other-model"] and models[0]["reasoning"]
    response = await rpc.call({"type": "set_model", "provider": "fake", "modelId": "nope"})
    assert not response["success"] and response["error"] == "Model not found: fake/nope"
    assert data(await rpc.call({"type": "set_thinking_level", "level": "high"})) is None
    assert data(await rpc.call({"type": "get_state"}))["thinkingLevel"] == "high"  # type: ignore[index]
    assert rpc.of("thinking_level_changed")[-1] == {"type": "thinking_level_changed", "level": "high"}
    assert data(await rpc.call({"type": "cycle_thinking_level"})) == {"level": "off"}  # (no xhigh for this one)
    assert data(await rpc.call({"type": "cycle_thinking_level"})) == {"level": "minimal"}
    switched = data(await rpc.call({"type": "set_model", "provider": "fake", "modelId": "other-model"}))
    assert switched["id"] == "other-model"  # type: ignore[index]
    assert data(await rpc.call({"type": "cycle_thinking_level"})) is None  # other-model does not think
    cycled = data(await rpc.call({"type": "cycle_model"}))
    assert cycled["model"]["id"] == "fake-model" and cycled["isScoped"] is False  # type: ignore[index]
    bad = await rpc.call({"type": "set_thinking_level", "level": "max"})
    assert not bad["success"] and "level" in bad["error"]


async def test_queue_modes_and_settings_hold_before_and_after_the_agent(rpc, fake) -> None:
    for command in ({"type": "set_steering_mode", "mode": "all"}, {"type": "set_follow_up_mode", "mode": "all"},
                    {"type": "set_auto_compaction", "enabled": False}):
        assert data(await rpc.call(command)) is None
    state = data(await rpc.call({"type": "get_state"}))
    assert (state["steeringMode"], state["followUpMode"], state["autoCompactionEnabled"]) == (  # type: ignore[index]
        "all", "all", False)
    await ask(rpc, "hi", "Hello", fake)  # the agent is made now: it has them
    agent = rpc.server.chat.agent
    assert (agent.agent.steering_mode, agent.agent.follow_up_mode, agent.compactor.settings.enabled) == (
        "all", "all", False)


async def test_auto_retry_off_leaves_a_failure_as_it_is(rpc, fake) -> None:
    assert data(await rpc.call({"type": "set_auto_retry", "enabled": False})) is None
    fake.script_status(500, {"error": {"message": "server error"}})
    await rpc.call({"type": "prompt", "message": "hi"})
    await rpc.until("agent_end")
    assert len(fake.requests) == 1 and not rpc.of("auto_retry_start")
    assert data(await rpc.call({"type": "set_auto_retry", "enabled": True})) is None
    fake.script_status(500, {"error": {"message": "server error"}})
    fake.script_openai(["ok"], usage=USAGE)
    await rpc.call({"type": "prompt", "message": "again"})
    await rpc.until("auto_retry_end")
    assert len(fake.requests) == 3


async def test_abort_retry_stops_the_wait(fake, tmp_path) -> None:
    never = asyncio.Event()

    async def wait_forever(seconds: float) -> None:
        await never.wait()

    driver, _ = await in_process(Place.make(tmp_path, fake), MemoryCatalog(), sleep=wait_forever)
    try:
        fake.script_status(503, {"error": {"message": "overloaded"}})
        await driver.call({"type": "prompt", "message": "hi"})
        await driver.until("auto_retry_start")
        assert data(await driver.call({"type": "abort_retry"})) is None
        await driver.until("auto_retry_end")
        assert driver.of("auto_retry_end")[0] == {"type": "auto_retry_end", "success": False, "attempt": 1,
                                                 "finalError": "Retry cancelled"}
        assert len(fake.requests) == 1
    finally:
        await driver.close()


async def test_compact(rpc, fake) -> None:
    await ask(rpc, "first question " * 20, "first answer " * 20, fake)
    await ask(rpc, "second", "two", fake)
    fake.responder = lambda request: fake.openai_reply(["## Goal\nthe summary"], usage=USAGE)  # (each part's)
    result = data(await rpc.call({"type": "compact", "customInstructions": "be brief"}))
    assert isinstance(result, dict)
    assert result["summary"].startswith("## Goal") and result["tokensBefore"] > 0 and result["firstKeptEntryId"]
    assert [r["type"] for r in rpc.records if r["type"].startswith("compaction")] == ["compaction_start",
                                                                                   "compaction_end"]
    end = rpc.of("compaction_end")[0]
    assert end["reason"] == "manual" and end["result"]["summary"] == result["summary"] and not end["aborted"]
    assert any("be brief" in str(r.body) for r in fake.requests[2:])
    messages = data(await rpc.call({"type": "get_messages"}))["messages"]  # type: ignore[index]
    assert messages[0]["role"] == "compactionSummary"


async def test_compact_with_nothing_to_compact_fails(rpc) -> None:
    response = await rpc.call({"type": "compact"})
    assert not response["success"] and "Nothing to compact" in response["error"]


async def test_bash_runs_and_goes_with_the_next_prompt(rpc, fake) -> None:
    result = data(await rpc.call({"type": "bash", "command": "echo out; echo err >&2; exit 3"}))
    assert result == {"output": "out\nerr\n", "exitCode": 3, "cancelled": False, "truncated": False}
    await ask(rpc, "what did it say?", "ok", fake)
    sent = str(fake.requests[-1].body["messages"])
    assert "Ran `echo out; echo err >&2; exit 3`" in sent and "out\\nerr" in sent
    roles = [m["role"] for m in data(await rpc.call({"type": "get_messages"}))["messages"]]  # type: ignore[index]
    assert roles == ["bashExecution", "user", "assistant"]


async def test_abort_bash(rpc, tmp_path) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    running = asyncio.ensure_future(rpc.call({"type": "bash", "command": f"echo started > {fifo}; sleep 60"}))
    assert await asyncio.wait_for(asyncio.to_thread(fifo.read_text), 30) == "started\n"  # it runs
    assert data(await rpc.call({"type": "abort_bash"})) is None
    result = data(await running)
    assert result["cancelled"] is True  # type: ignore[index]


async def test_sessions_name_new_switch_clone_fork(rpc, fake) -> None:
    await ask(rpc, "q1", "a1", fake)
    await ask(rpc, "q2", "a2", fake)
    first = rpc.server.chat.session_id
    assert data(await rpc.call({"type": "set_session_name", "name": "  work  "})) is None
    assert rpc.of("session_info_changed") == [{"type": "session_info_changed", "name": "work"}]
    assert data(await rpc.call({"type": "get_state"}))["sessionName"] == "work"  # type: ignore[index]
    empty = await rpc.call({"type": "set_session_name", "name": " "})
    assert not empty["success"] and empty["error"] == "Session name cannot be empty"

    assert data(await rpc.call({"type": "clone"})) == {"cancelled": False}
    clone = rpc.server.chat.session_id
    assert clone != first and len(data(await rpc.call({"type": "get_messages"}))["messages"]) == 4  # type: ignore

    assert data(await rpc.call({"type": "new_session"})) == {"cancelled": False}
    assert data(await rpc.call({"type": "get_messages"})) == {"messages": []}
    assert data(await rpc.call({"type": "switch_session", "sessionPath": first})) == {"cancelled": False}
    assert rpc.server.chat.session_id == first
    missing = await rpc.call({"type": "switch_session", "sessionPath": "no-such-session"})
    assert not missing["success"]

    forks = data(await rpc.call({"type": "get_fork_messages"}))["messages"]  # type: ignore[index]
    assert [f["text"] for f in forks] == ["q1", "q2"]
    assert data(await rpc.call({"type": "fork", "entryId": forks[1]["entryId"]})) == {"text": "q2", "cancelled": False}
    kept = data(await rpc.call({"type": "get_messages"}))["messages"]  # type: ignore[index]
    assert [m["content"][0]["text"] for m in kept] == ["q1", "a1"]  # before the prompt forked from
    assert not (await rpc.call({"type": "fork", "entryId": "nope"}))["success"]


async def test_export_html(rpc, fake, tmp_path) -> None:
    await ask(rpc, "hi", "Hello", fake)
    target = tmp_path / "out" / "session.html"
    assert data(await rpc.call({"type": "export_html", "outputPath": str(target)})) == {"path": str(target)}
    assert "<html" in target.read_text(encoding="utf-8").lower()
    default = Path(data(await rpc.call({"type": "export_html"}))["path"])  # type: ignore[index]
    assert default.suffix == ".html" and default.exists()  # noqa: ASYNC240  a stat of a local temp path
    assert not (await rpc.call({"type": "export_html", "outputPath": str(tmp_path / "x.md")}))["success"]


async def test_commands_are_templates_and_skills(rpc, fake) -> None:
    work: Path = rpc.place.work
    (work / ".pi" / "prompts").mkdir(parents=True)
    (work / ".pi" / "prompts" / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1 closely.\n")
    skill = work / ".pi" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy things up\n---\nTidy.\n")
    listed = data(await rpc.call({"type": "get_commands"}))["commands"]  # type: ignore[index]
    assert [(c["name"], c["source"], c["description"], c["sourceInfo"]["scope"]) for c in listed] == [
        ("review", "prompt", "Review a file", "project"), ("skill:tidy", "skill", "Tidy things up", "project")]
    assert listed[0]["sourceInfo"]["path"] == str(work / ".pi" / "prompts" / "review.md")
    await ask(rpc, "/review a.py", "ok", fake)  # a template is expanded, as Pi does
    assert "Review a.py closely." in str(fake.requests[-1].body["messages"])


async def test_a_prompt_with_an_image(rpc, fake) -> None:
    image = base64.b64encode(png_bytes(2, 3)).decode()
    fake.script_openai(["a picture"], usage=USAGE)
    response = await rpc.call({"type": "prompt", "message": "what is it?",
                               "images": [{"type": "image", "data": image, "mimeType": "image/png"}]})
    assert response["success"]
    await rpc.until("agent_end")
    content = rpc.of("message_start")[0]["message"]["content"]
    assert content[1] == {"type": "image", "data": image, "mimeType": "image/png"}
    bad = await rpc.call({"type": "prompt", "message": "x", "images": [{"type": "image", "data": "aGVsbG8=",
                                                                          "mimeType": "image/png"}]})
    assert not bad["success"] and "images[0] is not a PNG" in bad["error"]


async def test_steer_and_follow_up_while_idle_wait_for_the_next_prompt(rpc, fake) -> None:
    assert data(await rpc.call({"type": "steer", "message": "also this"})) is None
    assert data(await rpc.call({"type": "follow_up", "message": "and then that"})) is None
    assert rpc.of("queue_update")[-1] == {"type": "queue_update", "steering": ["also this"],
                                          "followUp": ["and then that"]}
    assert data(await rpc.call({"type": "get_state"}))["pendingMessageCount"] == 2  # type: ignore[index]
    assert not fake.requests  # nothing went out
    fake.script_openai(["one"], usage=USAGE)
    fake.script_openai(["two"], usage=USAGE)
    await rpc.call({"type": "prompt", "message": "go"})
    await rpc.until("agent_end")
    users = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["go", "also this", "and then that"]


async def test_a_jsonl_session_has_its_file_and_switch_session_takes_it(fake, tmp_path) -> None:
    from treechat.storage import open_catalog

    catalog = await open_catalog("jsonl", tmp_path / "store")
    driver, server = await in_process(Place.make(tmp_path, fake), catalog)
    try:
        await ask(driver, "hi", "Hello", fake)
        first = data(await driver.call({"type": "get_state"}))["sessionFile"]  # type: ignore[index]
        assert first.endswith(".jsonl") and Path(first).exists()  # noqa: ASYNC240  a stat of a local temp path
        await driver.call({"type": "new_session"})
        assert data(await driver.call({"type": "switch_session", "sessionPath": first})) == {"cancelled": False}
        assert data(await driver.call({"type": "get_last_assistant_text"})) == {"text": "Hello"}
        nothing = await driver.call({"type": "switch_session", "sessionPath": str(tmp_path / "none.jsonl")})
        assert not nothing["success"] and "Cannot read" in nothing["error"]
    finally:
        await driver.close()
        await catalog.close()
