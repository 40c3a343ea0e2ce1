"""The parts of `treechat acp` that need no process: the bounded line reader, what is no JSON-RPC
message, a prompt's blocks, a path replayed."""

from __future__ import annotations

import base64

import pytest
from acp import embedded_blob_resource, embedded_text_resource, image_block, resource_block, text_block
from acp.schema import ToolCallProgress, ToolCallStart

from tests.images import png_bytes
from treechat.acp.history import Replay
from treechat.acp.prompt import PromptError, read_prompt
from treechat.acp.wire import LineReader, TooLong, problem
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent, ToolCall, UserMessage


def reader(*chunks: bytes, max_line: int = 10) -> LineReader:
    pending = list(chunks)

    async def read() -> bytes:
        return pending.pop(0) if pending else b""

    return LineReader(read, max_line)


async def lines_of(lines: LineReader) -> list[bytes | TooLong]:
    out: list[bytes | TooLong] = []
    while (line := await lines.next()) is not None:
        out.append(line)
    return out


async def test_lines_across_chunks_and_one_too_long_skipped_as_it_arrives():
    lines = reader(b"ab", b"c\nde", b"f\n" + b"x" * 8, b"x" * 8, b"x" * 8, b"\nok\nlast")
    assert await lines_of(lines) == [b"abc", b"def", TooLong(24), b"ok", b"last"]


async def test_a_too_long_line_at_the_end_of_the_input():
    assert await lines_of(reader(b"short\n", b"y" * 25)) == [b"short", TooLong(25)]
    assert await lines_of(reader(b"z" * 11 + b"\n")) == [TooLong(11)]  # over by one, in one chunk


@pytest.mark.parametrize("message,expected", [
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize"}, None),
    ({"jsonrpc": "2.0", "method": "session/cancel"}, None),
    ({"jsonrpc": "2.0", "id": 3, "result": {}}, None),
    ([], (None, "a message must be a JSON object (batches are not supported)")),
    ({"id": [1], "method": "x"}, (None, "an id must be a string or a number")),
    ({"id": True, "method": "x"}, (None, "an id must be a string or a number")),
    ({"id": 4, "method": None}, (4, "a method must be a string")),
    ({"id": 5}, (5, "neither a request (method) nor a response (result or error)")),
    ({"hello": 1}, (None, "neither a request (method) nor a response (result or error)")),
])
def test_what_is_no_json_rpc_message(message, expected):
    assert problem(message) == expected


def test_a_prompt_keeps_mentions_in_place_and_files_after():
    found = read_prompt([text_block("see"), resource_block(embedded_text_resource("file:///w/a.py", "x = 1")),
                         text_block("please")], "/w")
    assert found.text == 'see a.py please\n\n<file path="a.py">\nx = 1\n</file>'
    picture = base64.b64encode(png_bytes()).decode()
    found = read_prompt([resource_block(embedded_blob_resource("file:///elsewhere/p.png", picture,
                                                               mime_type="image/png"))], "/w")
    assert found.text == "/elsewhere/p.png" and found.images[0].mime_type == "image/png"


@pytest.mark.parametrize("block,words", [
    (image_block("not base64!", "image/png"), "not base64"),
    (image_block(base64.b64encode(b"plain text").decode(), "image/png"), "not a PNG"),
    (resource_block(embedded_text_resource("file:///w/big.txt", "x" * 100_001)), "big.txt is"),
    (resource_block(embedded_blob_resource("file:///w/a.zip", "AAAA", mime_type="application/zip")), "binary"),
])
def test_blocks_that_cannot_be_sent_are_one_sentence(block, words):
    with pytest.raises(PromptError, match=words):
        read_prompt([block], "/w")


def entry(n: int, message: UserMessage | AssistantMessage, parent: str | None) -> MessageEntry:
    return MessageEntry(id=f"e{n}", parent_id=parent, message=message)


def test_a_call_without_a_result_ends_failed_and_a_long_path_says_what_it_left_out():
    path = [entry(1, UserMessage(content="go"), None),
            entry(2, AssistantMessage(content=[ToolCall(id="t1", name="bash", arguments={"command": "ls"})],
                                      stop_reason="aborted"), "e1")]
    updates = Replay("/w").updates(path)
    assert [u.session_update for u in updates] == ["user_message_chunk", "tool_call", "tool_call_update"]
    assert isinstance(updates[1], ToolCallStart) and updates[1].kind == "execute"
    assert isinstance(updates[2], ToolCallProgress) and updates[2].status == "failed"
    many = [entry(n, UserMessage(content=f"m{n}") if n % 2 else AssistantMessage(content=[TextContent(text="r")]),
                  f"e{n - 1}" if n else None) for n in range(2003)]
    updates = Replay("/w").updates(many)
    assert updates[0].session_update == "agent_thought_chunk" and "3 earlier messages" in updates[0].content.text
    assert len(updates) == 2001
