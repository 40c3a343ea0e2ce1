"""`-p --mode json` against Pi 0.73.1's own output for the same conversations (recorded in
tests/fixtures/pi_protocol/json_*.jsonl by record_pi.py): the same kinds of events in the same
order, of the same shapes."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from treechat.protocols.framing import json_line
from treechat.protocols.json_mode import run_json
from treechat.storage.memory import MemoryCatalog

from .conversations import JSON_CONVERSATIONS, Conversation, kinds, load_fixture, same_shape, shape
from .driver import ListLines
from .helpers import TREECHAT, Place


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def allow(command: str) -> bool:
    return True


async def run_conversation(tmp_path: Path, fp: FakeProvider, conversation: Conversation) -> tuple[int, list[dict]]:
    conversation.script(fp)
    place = Place.make(tmp_path, fp, api=conversation.api, reasoning=conversation.reasoning)
    catalog = MemoryCatalog()
    chat = place.chat(catalog, tools=conversation.tools)
    chat.confirm = allow  # (Pi runs a command without asking)
    await chat.open(await catalog.create(cwd=str(place.work)))
    sink = ListLines()
    code = await run_json(chat, conversation.prompt, out=sink, err=io.StringIO())
    await chat.close()
    return code, [json.loads(json_line(r)) for r in sink.records]


@pytest.mark.parametrize("name", sorted(JSON_CONVERSATIONS))
async def test_the_same_events_in_the_same_order_as_pi(fake, tmp_path, name) -> None:
    code, records = await run_conversation(tmp_path, fake, JSON_CONVERSATIONS[name])
    pi = load_fixture(f"json_{name}")
    assert kinds(records) == kinds(pi)
    for ours, theirs in zip(records, pi):
        assert same_shape(ours, theirs), (ours.get("type"), shape(ours) ^ shape(theirs))
    assert code == (1 if name == "error" else 0)


async def test_a_reply_reads_as_pi_tells_it(fake, tmp_path) -> None:
    _, records = await run_conversation(tmp_path, fake, JSON_CONVERSATIONS["text"])
    header, *events = records
    assert header["type"] == "session" and header["version"] == 3 and header["cwd"] == str(tmp_path / "work")
    deltas = [e["assistantMessageEvent"] for e in events if e["type"] == "message_update"]
    assert [(d["type"], d.get("delta"), d.get("content")) for d in deltas] == [
        ("text_start", None, None), ("text_delta", "Hel", None), ("text_delta", "lo", None), ("text_end", None, "Hello")]
    end = next(e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    assert end["message"]["content"] == [{"type": "text", "text": "Hello"}]
    assert end["message"]["usage"]["input"] == 10 and end["message"]["stopReason"] == "stop"
    assert [m["role"] for m in events[-1]["messages"]] == ["user", "assistant"]


async def test_a_retry_is_told_as_pi_tells_it(fake, tmp_path) -> None:
    _, records = await run_conversation(tmp_path, fake, JSON_CONVERSATIONS["retry"])
    start = next(r for r in records if r["type"] == "auto_retry_start")
    assert start["attempt"] == 1 and start["maxAttempts"] == 3 and "server error" in start["errorMessage"]
    assert next(r for r in records if r["type"] == "auto_retry_end") == {"type": "auto_retry_end", "success": True,
                                                                          "attempt": 1}
    ends = [r for r in records if r["type"] == "agent_end"]
    # the failed attempt's run lists the prompt and the failure; the retried run, what came after
    assert [[m["role"] for m in e["messages"]] for e in ends] == [["user", "assistant"], ["assistant"]]
    assert ends[0]["messages"][1]["stopReason"] == "error" and ends[1]["messages"][0]["stopReason"] == "stop"


async def test_tool_calls_end_with_the_call(fake, tmp_path) -> None:
    _, records = await run_conversation(tmp_path, fake, JSON_CONVERSATIONS["read"])
    end = next(r["assistantMessageEvent"] for r in records if r["type"] == "message_update"
               and r["assistantMessageEvent"]["type"] == "toolcall_end")
    assert end["toolCall"] == {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "hello.txt"}}
    done = next(r for r in records if r["type"] == "tool_execution_end")
    assert done["toolName"] == "read" and not done["isError"] and "hello world" in done["result"]["content"][0]["text"]


@pytest.mark.slow  # the real treechat process
async def test_the_command_line_writes_only_json_on_stdout(fake, tmp_path) -> None:
    """The real `treechat -p --mode json`: every stdout line is a record (the note about the
    session, and anything a library prints, goes to stderr)."""
    JSON_CONVERSATIONS["text"].script(fake)
    place = Place.make(tmp_path, fake)
    proc = await asyncio.create_subprocess_exec(
        TREECHAT, "--model", "fake/fake-model", "--mode", "json", "-p", "hi", cwd=place.work, env=place.env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    lines = out.decode().splitlines()
    assert proc.returncode == 0, err
    assert kinds([json.loads(line) for line in lines]) == kinds(load_fixture("json_text"))
    assert b"treechat: session" in err
