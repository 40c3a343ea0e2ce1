"""Approvals over RPC: what the app asks in a dialog (a shell command, a file change, a read
outside the working folder) is an `extension_ui_request` to the client (Pi's confirm dialog);
only `confirmed: true` allows, no answer within the bound or a no refuses; --yes asks nothing."""

from __future__ import annotations

import pytest

from tests.fake_provider import FakeProvider
from treechat.storage.memory import MemoryCatalog

from .conversations import USAGE
from .driver import Driver
from .helpers import Place, in_process


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


def call_tool(fp: FakeProvider, name: str, arguments: str) -> None:
    fp.script_openai(tool_calls=[{"id": "c1", "name": name, "arguments": arguments}], usage=USAGE)
    fp.script_openai(["done"], usage=USAGE)


async def run(driver: Driver, answer: dict | None) -> tuple[dict, dict]:
    """Prompt; answer the request that comes (None: never); the request and the tool's result."""
    await driver.call({"type": "prompt", "message": "go"})
    request = await driver.wait(lambda r: r.get("type") == "extension_ui_request")
    if answer is not None:
        await driver.send({"type": "extension_ui_response", "id": request["id"], **answer})
    await driver.until("agent_end")
    result = next(r for r in driver.records if r["type"] == "tool_execution_end")
    return request, result


@pytest.mark.parametrize(("answer", "ran"), [({"confirmed": True}, True), ({"confirmed": False}, False),
                                             ({"cancelled": True}, False), (None, False)])
async def test_a_shell_command_is_asked_about(fake, tmp_path, answer, ran) -> None:
    call_tool(fake, "bash", '{"command": "echo hi > made.txt; echo made"}')
    place = Place.make(tmp_path, fake)
    driver, _ = await in_process(place, MemoryCatalog(), tools=("bash",), approval_timeout=0.3)
    try:
        request, result = await run(driver, answer)
    finally:
        await driver.close()
    assert request["method"] == "confirm" and request["timeout"] == 300
    assert request["approval"] == {"kind": "bash", "command": "echo hi > made.txt; echo made"}
    assert request["message"] == "echo hi > made.txt; echo made"
    assert (place.work / "made.txt").exists() is ran
    assert result["isError"] is not ran
    if not ran:
        assert "declined" in result["result"]["content"][0]["text"]


async def test_a_file_change_is_asked_about_with_its_diff(fake, tmp_path) -> None:
    call_tool(fake, "write", '{"path": "notes.txt", "content": "one\\ntwo\\n"}')
    place = Place.make(tmp_path, fake)
    driver, _ = await in_process(place, MemoryCatalog(), tools=("write",))
    try:
        request, result = await run(driver, {"confirmed": True})
    finally:
        await driver.close()
    approval = request["approval"]
    assert (approval["kind"], approval["path"], approval["created"], approval["added"]) == ("write", "notes.txt",
                                                                                          True, 2)
    assert "+one" in approval["diff"] and not result["isError"]
    assert (place.work / "notes.txt").read_text() == "one\ntwo\n"


async def test_a_read_outside_the_working_folder_is_asked_about(fake, tmp_path) -> None:
    (tmp_path / "secret.txt").write_text("s3cret\n")
    call_tool(fake, "read", f'{{"path": "{tmp_path / "secret.txt"}"}}')
    driver, _ = await in_process(Place.make(tmp_path, fake), MemoryCatalog(), tools=("read",))
    try:
        request, result = await run(driver, {"confirmed": False})
    finally:
        await driver.close()
    assert request["approval"]["kind"] == "read_outside" and request["approval"]["tool"] == "read"
    assert result["isError"] and "s3cret" not in str(result)


async def test_yes_asks_nothing(fake, tmp_path) -> None:
    call_tool(fake, "bash", '{"command": "echo made"}')
    driver, _ = await in_process(Place.make(tmp_path, fake), MemoryCatalog(), tools=("bash",), yes=True)
    try:
        await driver.call({"type": "prompt", "message": "go"})
        await driver.until("agent_end")
    finally:
        await driver.close()
    assert not driver.of("extension_ui_request")
    assert driver.of("tool_execution_end")[0]["result"]["content"][0]["text"] == "made"


async def test_an_answer_to_nothing_asked_is_ignored(fake, tmp_path) -> None:
    driver, _ = await in_process(Place.make(tmp_path, fake), MemoryCatalog())
    try:
        await driver.send({"type": "extension_ui_response", "id": "never-asked", "confirmed": True})
        assert (await driver.call({"type": "get_state"}))["success"]  # still serving, nothing said about it
    finally:
        await driver.close()
    assert [r["type"] for r in driver.records] == ["response"]


async def test_the_end_of_stdin_refuses_an_open_question(fake, tmp_path) -> None:
    call_tool(fake, "bash", '{"command": "echo made > made.txt"}')
    place = Place.make(tmp_path, fake)
    driver, _ = await in_process(place, MemoryCatalog(), tools=("bash",))
    await driver.call({"type": "prompt", "message": "go"})
    await driver.wait(lambda r: r.get("type") == "extension_ui_request")
    await driver.close()  # stdin ends with the question open
    assert not (place.work / "made.txt").exists()
    assert driver.of("agent_end")  # the run ended


async def test_a_sub_agents_question_names_it(fake, tmp_path) -> None:
    task = '{"description": "make a file", "prompt": "Make made.txt."}'
    fake.script_openai(tool_calls=[{"id": "t1", "name": "task", "arguments": task}], usage=USAGE)
    fake.script_openai(tool_calls=[{"id": "b1", "name": "bash", "arguments": '{"command": "echo hi > made.txt"}'}])
    fake.script_openai(["made it"])  # the sub-agent's answer
    fake.script_openai(["done"], usage=USAGE)
    place = Place.make(tmp_path, fake)
    driver, _ = await in_process(place, MemoryCatalog(), tools=("bash", "task"))
    try:
        request, result = await run(driver, {"confirmed": True})
    finally:
        await driver.close()
    assert request["title"] == "task 'make a file' asks: Run this command?"
    asker = request["approval"]["asker"]
    assert (asker["kind"], asker["description"]) == ("task", "make a file") and asker["sessionId"]
    assert (place.work / "made.txt").exists() and not result["isError"]
    assert result["result"]["content"][0]["text"] == "made it"
    assert result["result"]["details"]["childSessionId"] == asker["sessionId"]
