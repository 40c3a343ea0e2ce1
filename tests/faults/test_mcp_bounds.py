"""Issue 36: an MCP server cannot make treechat's requests huge, take its memory or keep it busy.

- 50,000 tools: a hundred are offered, and /mcp, `treechat mcp` and a notice say what was left out;
  a listing of 50,000 in one answer is refused before it is parsed (its objects are counted).
- A gzip-compressed HTTP answer of 50 MB (50 KB on the wire) is stopped at the bound in
  decompressed bytes (it passed the 16 MB bound, counted on the wire, and took 2 GB).
- 15 MB of empty content blocks (over stdio, over HTTP) are refused before a block is built (they
  cost 1.3 GB), and the server stays usable.
- A flood of notifications is read at a bounded rate and passed on at a lower one; list_changed is
  one listing at a time (the idle app was at 95% CPU). Asserted on counts against the time it
  took, never on CPU time: a slower machine only allows more.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from contextlib import redirect_stdout

from treechat.cli.main import main
from treechat.mcp import bounds
from treechat.mcp.server import RELIST_GAP
from treechat.mcp.tools import MAX_TOOLS

from ..mcp.helpers import call, fake, spec, started
from ..mcp.http_server import hostile_http_server


async def test_fifty_thousand_tools_are_bounded_and_said(tmp_path) -> None:
    manager, lines = await started(fake("many", "--tools", "50000", "--page", "1000"), cwd=str(tmp_path))
    try:
        offered = manager.tools()
        assert len(offered) == MAX_TOOLS and offered[0].name == "many__echo"
        row = manager.rows()[0]
        assert row.state == "ready" and len(row.tools) == MAX_TOOLS
        assert row.bounded is not None and row.bounded.startswith(f"{MAX_TOOLS} of its 1,000+ tools are offered")
        assert lines == [f"MCP server 'many': {row.bounded}."]
        assert f"    bounded: {row.bounded}" in _listing(manager).splitlines()
        await manager.restart("many")  # listed again, the same: said once, not at every listing
        assert manager.rows()[0].bounded == row.bounded and len(lines) == 1
    finally:
        await manager.close()


def _listing(manager) -> str:
    from treechat.mcp.manager import format_rows

    return format_rows(manager.rows(), manager.listing_problems())


async def test_a_tool_with_a_huge_schema_is_left_out_and_counted(tmp_path) -> None:
    manager, lines = await started(fake("wide", "--tools", "3", "--big-schema"), cwd=str(tmp_path))
    try:
        names = [t.name for t in manager.tools()]
        assert "wide__t0" not in names and "wide__t1" in names
        assert "1 of them over 16 KB each" in (manager.rows()[0].bounded or "")
    finally:
        await manager.close()


async def test_fifty_thousand_tools_in_one_answer_are_refused_unparsed(tmp_path) -> None:
    manager, lines = await started(fake("flat", "--tools", "50000"), cwd=str(tmp_path))
    try:
        assert manager.rows()[0].state == "failed" and manager.tools() == []
        assert lines == ["MCP server 'flat' could not start: the server's answer held over 20,000 JSON objects and "
                         "lists; treechat did not read it."]
    finally:
        await manager.close()


def test_treechat_mcp_says_the_bound(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    server = fake("many", "--tools", "500", "--page", "100")
    args = json.dumps([*server.config.args])
    (home / "config.toml").write_text(f'[mcp_servers.many]\ncommand = {json.dumps(server.config.command)}\n'
                                      f"args = {args}\ntrust = true\n")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--home", str(home), "mcp"]) == 0
    assert f"bounded: {MAX_TOOLS} of its 509 tools are offered to the model" in out.getvalue()
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--home", str(home), "mcp", "--json"]) == 0
    row = json.loads(out.getvalue())["servers"][0]
    assert len(row["tools"]) == MAX_TOOLS and row["bounded"].startswith(f"{MAX_TOOLS} of its 509 tools")


async def test_every_servers_tools_together_are_bounded(tmp_path, monkeypatch) -> None:
    from treechat.mcp import tools

    monkeypatch.setattr(tools, "MAX_ALL_TOOLS", 150)
    manager, _ = await started(fake("a", "--tools", "92"), fake("b", "--tools", "92"), cwd=str(tmp_path))
    try:
        offered = manager.tools()
        assert len(offered) == 150 and offered[0].name == "a__echo" and offered[-1].name.startswith("b__")
        note = manager.all_bound_note()
        assert note is not None and note.startswith("50 MCP tools are not offered to the model (b__t")
        assert note in manager.listing_problems()
    finally:
        await manager.close()


async def test_a_gzip_bomb_over_http_stops_at_the_bound_in_decompressed_bytes(tmp_path) -> None:
    async with hostile_http_server(bomb_bytes=50 << 20) as url:
        manager, lines = await started(spec("web", url=url), cwd=str(tmp_path), max_message=1_000_000)
        try:
            assert manager.rows()[0].state == "ready"
            result = await call(manager, "web__bomb")
            assert result.is_error and "over 1 MB; treechat stopped reading it" in result.content[0].text
            assert (await call(manager, "web__add", {"a": 2, "b": 3})).content[0].text == "2 + 3 = 5"
        finally:
            await manager.close()


async def test_fifteen_megabytes_of_empty_blocks_over_http_are_refused(tmp_path) -> None:
    async with hostile_http_server() as url:
        manager, _ = await started(spec("web", url=url), cwd=str(tmp_path))
        try:
            result = await call(manager, "web__blocks")
            assert result.is_error and "held over 20,000 JSON objects and lists" in result.content[0].text
            assert (await call(manager, "web__add", {"a": 1, "b": 1})).content[0].text == "1 + 1 = 2"
        finally:
            await manager.close()


async def test_fifteen_megabytes_of_empty_blocks_over_stdio_are_refused(tmp_path) -> None:
    manager, lines = await started(fake("blk"), cwd=str(tmp_path))
    try:
        result = await call(manager, "blk__blocks", {"count": 500_000})
        assert result.is_error and "held over 20,000 JSON objects and lists; treechat did not read it" in (
            result.content[0].text)
        few = await call(manager, "blk__blocks", {"count": 5_000})  # under the bound: read, the first 1,000
        assert not few.is_error and "[4,000 more content blocks: treechat reads the first 1,000]" in few.content[0].text
        assert (await call(manager, "blk__echo", {"text": "still here"})).content[0].text == "echo: still here"
        assert lines == []
    finally:
        await manager.close()


async def test_a_notification_flood_is_read_and_passed_on_at_bounded_rates(tmp_path) -> None:
    manager, lines = await started(fake("loud", "--flood", "1000000"), cwd=str(tmp_path))
    server = manager.servers["loud"]
    began = time.monotonic()
    try:
        for _ in range(3000):  # until a second's worth has been read at the rate (bounded: fails, never hangs)
            if server.counts.taken > bounds.READ_BURST + bounds.READ_RATE:
                break
            await asyncio.sleep(0.01)
        counts, took = server.counts, time.monotonic() - began
        assert counts.waits, "the flood was never throttled"
        # what was read and passed on: within the bursts and the rates for the time it took (+ the
        # transport's buffer); a million were sent, as fast as the pipe takes them
        assert counts.taken <= bounds.READ_BURST + bounds.READ_RATE * (took + 1) + 64, (counts, took)
        passed = counts.taken - counts.dropped
        assert passed <= bounds.NOTIFY_BURST + bounds.NOTIFY_RATE * (took + 1) + 8, (counts, took)
        assert counts.dropped > 0
        assert server.relists <= 2 + took / RELIST_GAP, (server.relists, took)  # a third of them were list_changed
        assert lines == []
    finally:
        await manager.close()
