"""The real `treechat --mode rpc` on pipes, driven as Pi's RpcClient drives `pi --mode rpc`:
bad input answered and the process still serving, a line's bytes bounded, U+2028 inside a
string, abort, and stdin's end stopping a run and ending the process cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from treechat.storage.memory import MemoryCatalog

from .conversations import USAGE
from .helpers import Place, child, in_process


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def test_bad_input_is_answered_and_the_process_goes_on(fake, tmp_path) -> None:
    driver, channel = await child(Place.make(tmp_path, fake))
    try:
        assert (await driver.call({"type": "get_state"}))["success"]
        before = peak_rss_kb(channel.proc.pid)
        start = len(driver.records)
        await driver.send_raw(b"not json\n")
        await driver.send_raw(b"\xff\xfe{}\n")
        await driver.send_raw(b"[1, 2]\n")
        await driver.send_raw(b"\n")  # a blank line: nothing
        await driver.send_raw(b'{"type": "prompt", "id": "p"}\n')
        await driver.send_raw(b'{"type": "set_model", "provider": 3, "modelId": "x", "id": "m"}\n')
        await driver.send_raw(b'{"type": "nonsense", "id": "n"}\n')
        await driver.send_raw(b"[" * 100_000 + b"\n")
        huge = b'{"type": "prompt", "message": "' + b"x" * (100 * 1024 * 1024) + b'"}\n'
        for at in range(0, len(huge), 1 << 20):
            await driver.send_raw(huge[at:at + (1 << 20)])
        state = await driver.call({"type": "get_state"})
        assert state["success"]
        after = peak_rss_kb(channel.proc.pid)
    finally:
        await driver.close()
    answers = [r for r in driver.records[start:] if r.get("type") == "response"]
    errors = [(r["command"], r.get("id"), r["error"]) for r in answers if not r["success"]]
    assert [e[:2] for e in errors] == [("parse", None), ("parse", None), ("parse", None), ("prompt", "p"),
                                       ("set_model", "m"), ("nonsense", "n"), ("parse", None), ("parse", None)]
    assert "not UTF-8" in errors[1][2] and 'missing "message"' in errors[3][2] and '"provider"' in errors[4][2]
    assert errors[5][2] == "Unknown command: nonsense" and "over the limit" in errors[7][2]
    assert after - before < 48 * 1024  # a 100 MB line was never held (the limit is 32 MB)
    assert channel.proc.returncode == 0 and b"Traceback" not in channel.stderr


async def test_u2028_inside_a_string_is_not_a_line_end(fake, tmp_path) -> None:
    fake.script_openai(["one\u2028two"], usage=USAGE)
    driver, channel = await child(Place.make(tmp_path, fake))
    try:
        text = "before\u2028after\u2029end"
        await driver.send_raw(json.dumps({"type": "prompt", "message": text, "id": "p"},
                                         ensure_ascii=False).encode() + b"\n")
        assert (await driver.wait(lambda r: r.get("id") == "p"))["success"]
        await driver.until("agent_end")
        messages = (await driver.call({"type": "get_messages"}))["data"]["messages"]
    finally:
        await driver.close()
    assert messages[0]["content"][0]["text"] == text and messages[1]["content"][0]["text"] == "one\u2028two"
    assert "before\u2028after" in fake.requests[0].body["messages"][-1]["content"]
    raw = b"\n".join(driver.raw)
    assert "\u2028".encode() not in raw and b"\\u2028" in raw  # written escaped: safe for any line reader


async def test_abort_stops_the_reply_and_keeps_it(fake, tmp_path) -> None:
    fake.script_openai(["part", "ial", " never"], usage=USAGE, hang_after=2)
    driver, channel = await child(Place.make(tmp_path, fake))
    try:
        await driver.call({"type": "prompt", "message": "go"})
        await driver.until("message_update", 2)
        assert (await driver.call({"type": "abort"}))["success"]
        await driver.until("agent_end")
        state = (await driver.call({"type": "get_state"}))["data"]
        messages = (await driver.call({"type": "get_messages"}))["data"]["messages"]
    finally:
        await driver.close()
    assert state["isStreaming"] is False
    assert messages[-1]["stopReason"] == "aborted" and messages[-1]["content"][0]["text"] == "partial"


async def test_the_end_of_stdin_stops_the_run_and_ends_the_process(fake, tmp_path) -> None:
    fake.script_openai(["part", "ial", " never"], usage=USAGE, hang_after=2)
    place = Place.make(tmp_path, fake)
    driver, channel = await child(place)
    await driver.call({"type": "prompt", "message": "go"})
    await driver.until("message_update", 2)
    await driver.close()
    assert channel.proc.returncode == 0 and b"Traceback" not in channel.stderr
    assert driver.of("agent_end")  # the run was stopped and said so
    again, _ = await child(place, "-c")  # the session continued: the partial reply was kept
    try:
        messages = (await again.call({"type": "get_messages"}))["data"]["messages"]
    finally:
        await again.close()
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[1]["stopReason"] == "aborted"


async def test_a_line_limit_in_process(fake, tmp_path) -> None:
    driver, _ = await in_process(Place.make(tmp_path, fake), MemoryCatalog(), line_limit=100)
    try:
        await driver.send_raw(b'{"type": "get_state", "id": "' + b"x" * 200 + b'"}\n')
        await driver.send_raw(b'{"type": "get_state", "id": "ok"}\r\n')
        assert (await driver.wait(lambda r: r.get("id") == "ok"))["success"]
    finally:
        await driver.close()
    assert driver.records[0]["command"] == "parse" and "over the limit of 100 bytes" in driver.records[0]["error"]
