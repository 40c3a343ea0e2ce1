"""MCP servers as a chat runs them: the real mcp-server-time over stdio, an SDK server over
streamable HTTP, and the faults (a server that cannot start, crashes, hangs, says too much).
Every fault ends in one line and an error result; none stops anything else."""

from __future__ import annotations

import asyncio
import time

import pytest

from treechat.llm.abort import AbortSignal
from treechat.storage.model import ImageContent

from ..narrow import of
from .helpers import call, fake, spec, started, time_server
from .http_server import TOKEN, http_server


async def test_the_real_time_server_lists_its_tools_and_answers_a_call(tmp_path) -> None:
    manager, lines = await started(spec("time", command=time_server()), cwd=str(tmp_path))
    try:
        names = [t.name for t in manager.tools()]
        assert names == ["time__get_current_time", "time__convert_time"]
        schema = manager.tools()[0].parameters
        timezone = of(dict, of(dict, schema["properties"])["timezone"])
        assert schema["required"] == ["timezone"] and timezone["type"] == "string"
        result = await call(manager, "time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert not result.is_error and '"timezone": "Asia/Tokyo"' in result.content[0].text
        bad = await call(manager, "time__get_current_time", {"timezone": "Nowhere/Nothing"})
        assert bad.is_error and "Invalid timezone" in bad.content[0].text  # the server's own words
        assert lines == []
    finally:
        await manager.close()


async def test_an_http_server_gets_its_header_from_the_environment(tmp_path) -> None:
    async with http_server() as url:
        good = spec("web", url=url, headers={"Authorization": "Bearer ${I24_TOKEN}"})
        manager, lines = await started(good, cwd=str(tmp_path), env={"I24_TOKEN": TOKEN})
        try:
            assert [t.name for t in manager.tools()] == ["web__add"]
            result = await call(manager, "web__add", {"a": 2, "b": 3})
            assert result.content[0].text == "2 + 3 = 5"
        finally:
            await manager.close()
        # the variable unset: the server is not started, and the line names the variable, never a value
        manager, lines = await started(good, cwd=str(tmp_path), env={})
        await manager.close()
        assert lines == ["MCP server 'web' could not start: header Authorization names ${I24_TOKEN}, which is not "
                         "set in the environment."]
        wrong = spec("web", url=url, headers={"Authorization": "Bearer nope"})
        manager, lines = await started(wrong, cwd=str(tmp_path), env={})
        await manager.close()
        assert manager.rows()[0].state == "failed" and len(lines) == 1 and "nope" not in lines[0]


async def test_servers_that_cannot_start_cost_one_line_each_and_the_others_work(tmp_path) -> None:
    manager, lines = await started(
        spec("missing", command="treechat-no-such-server"),
        fake("broken", "--crash-at-start"),
        fake("silent", "--silent", startup=1.0),
        fake("good"), cwd=str(tmp_path))
    try:
        assert sorted(lines) == sorted([
            "MCP server 'missing' could not start: cannot start 'treechat-no-such-server': no such program "
            "(is it installed and on PATH?).",
            "MCP server 'broken' could not start: exited with status 1 (it said: ModuleNotFoundError: No module "
            "named 'missing_dep').",
            "MCP server 'silent' could not start: did not start within 1 s.",
        ])  # (in the order they failed)
        assert {r.name: r.state for r in manager.rows()} == {"missing": "failed", "broken": "failed",
                                                             "silent": "failed", "good": "ready"}
        assert (await call(manager, "good__echo", {"text": "hi"})).content[0].text == "echo: hi"
    finally:
        await manager.close()


async def test_a_crash_is_restarted_once_then_reported_in_one_line(tmp_path) -> None:
    counter = tmp_path / "starts"
    manager, lines = await started(fake("flaky", "--flaky", str(counter)), cwd=str(tmp_path))
    try:
        crashed = await call(manager, "flaky__crash")
        assert crashed.is_error and "stopped during the call" in crashed.content[0].text
        server = manager.servers["flaky"]
        await _until(lambda: server.state == "ready" and server.restarted == 1)
        assert lines[0] == ("MCP server 'flaky' stopped (exited with status 7 (it said: fatal: the crash tool was "
                            "called)); restarting it.")
        assert (await call(manager, "flaky__echo", {"text": "back"})).content[0].text == "echo: back"
        await call(manager, "flaky__crash")
        await _until(lambda: server.state == "failed")
        assert lines[-1].startswith("MCP server 'flaky' stopped again (exited with status 7")
        assert lines[-1].endswith("its tools are off (/mcp restart flaky tries again).")
        assert manager.tools() == [] and counter.read_text() == "2"  # restarted once, not again
        gone = await call_any(server)
        assert "not running" in gone
        await manager.restart("flaky")
        assert server.state == "ready" and counter.read_text() == "3"
    finally:
        await manager.close()


async def call_any(server) -> str:
    from treechat.mcp.server import Unavailable

    with pytest.raises(Unavailable) as caught:
        await server.call("echo", {"text": "x"}, 1)
    return str(caught.value)


async def test_a_hanging_call_ends_at_the_timeout_and_esc_ends_it_at_once(tmp_path) -> None:
    manager, _ = await started(fake("slow", timeout=0.5), cwd=str(tmp_path))
    try:
        began = time.monotonic()
        result = await call(manager, "slow__slow", {"seconds": 30})
        assert result.is_error and "did not answer within 0.5 s" in result.content[0].text
        assert time.monotonic() - began < 10
        manager.servers["slow"].spec = fake("slow", timeout=60)  # a long limit: only Esc ends it now
        signal = AbortSignal()
        asyncio.get_running_loop().call_later(0.3, signal.abort)
        began = time.monotonic()
        result = await call(manager, "slow__slow", {"seconds": 30}, signal=signal)
        assert result.is_error and "cancelled" in result.content[0].text
        assert time.monotonic() - began < 5
    finally:
        await manager.close()


async def test_answers_are_bounded_in_bytes_and_in_what_the_model_sees(tmp_path) -> None:
    manager, lines = await started(fake("big"), cwd=str(tmp_path), max_message=1_000_000)
    try:
        huge = await call(manager, "big__huge")  # a 3 MB line: never held whole, the call fails
        assert huge.is_error and "over 1 MB; treechat did not read it" in huge.content[0].text
        assert (await call(manager, "big__echo", {"text": "still here"})).content[0].text == "echo: still here"
        flood = await call(manager, "big__flood")  # 250 KB of text: the model sees its first 2,000 lines
        text = flood.content[0].text
        assert not flood.is_error and len(text.encode()) < 52_000
        assert text.endswith("[Output truncated: the tool returned 253.9 KB of text; the first 25.4 KB are shown.]")
        assert lines == []
    finally:
        await manager.close()


async def test_images_and_resource_links_come_back_as_the_model_can_take_them(tmp_path) -> None:
    manager, _ = await started(fake("media"), cwd=str(tmp_path))
    try:
        picture = await call(manager, "media__picture")
        assert picture.content[0].text == "here it is"
        assert isinstance(picture.content[1], ImageContent) and picture.content[1].mime_type == "image/png"
        link = await call(manager, "media__link")
        assert link.content[0].text == ("[resource link: report <file:///tmp/report.txt> (text/plain) — the report]\n"
                                        "[resource mem://note]\na note")
    finally:
        await manager.close()


async def _until(predicate, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)
