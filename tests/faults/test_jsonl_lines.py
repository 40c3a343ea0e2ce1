"""Issue 21 item 6: one bad line never hides a JSONL session. A byte that is not UTF-8 in one user
message made the whole file "an unreadable session file": not listed, `tree ID` a traceback, `-p`
unable to append; import of the same file lost only that line. Now the byte reads as U+FFFD (as
Pi, on Node, reads it) everywhere, and a line that is no entry at all is set aside and counted
while the rest of the session lists, opens and takes appends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treechat.cli.main import main
from treechat.load_warning import load_warning
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, UserMessage, message_text


async def make_session(home: Path) -> Path:
    catalog = await open_catalog("jsonl", home)
    try:
        storage = await catalog.create(session_id="one-bad-line")
        session = await Session.open(storage)
        await session.append_message(UserMessage(content="first question"))
        await session.append_message(AssistantMessage(content=[TextContent(text="an answer")], provider="p", model="m"))
        await session.append_message(UserMessage(content="second MARKER question"))
        await session.append_message(AssistantMessage(content=[TextContent(text="answer two")], provider="p", model="m"))
        return Path(storage.file)  # type: ignore[attr-defined]
    finally:
        await catalog.close()


def damage(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))


async def texts(home: Path) -> list[str]:
    catalog = await open_catalog("jsonl", home)
    try:
        session = await Session.open(await catalog.open("one-bad-line"))
        return [message_text(m) for m in (await session.build_session_context()).messages]
    finally:
        await catalog.close()


async def test_a_byte_that_is_not_utf8_reads_as_a_replacement_character(tmp_path):
    path = await make_session(tmp_path)
    damage(path, b"MARKER", b"MA\xffKER")
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        [row] = await catalog.list()
        assert (row.id, row.message_count, row.first_message) == ("one-bad-line", 4, "first question")
        assert catalog.problems == []  # type: ignore[attr-defined]
        storage = await catalog.open("one-bad-line")
        assert load_warning(storage) is None  # nothing was set aside
        session = await Session.open(storage)
        await session.append_message(UserMessage(content="a third question"))  # -p can append
    finally:
        await catalog.close()
    assert await texts(tmp_path) == ["first question", "an answer", "second MA\ufffdKER question", "answer two",
                                     "a third question"]


def test_tree_and_import_read_it_too(tmp_path, capsys):
    import asyncio

    path = asyncio.run(make_session(tmp_path / "jsonl-home"))
    damage(path, b"MARKER", b"MA\xffKER")
    assert main(["--home", str(tmp_path / "jsonl-home"), "--storage", "jsonl", "tree", "one-bad-line"]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert len(tree["entries"]) == 4 and "MA\ufffdKER" in json.dumps(tree, ensure_ascii=False)
    assert main(["--home", str(tmp_path / "db-home"), "import", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == "one-bad-line\n" and "imported 1 session (4 entries)" in err and "skipped" not in err


@pytest.mark.parametrize("bad", [b'"content":5', b'"content":{"not":"content"}'])
async def test_a_line_that_is_no_entry_is_set_aside_and_the_rest_works(tmp_path, bad):
    path = await make_session(tmp_path)
    damage(path, b'"content":"second MARKER question"', bad)
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        [row] = await catalog.list()
        assert row.id == "one-bad-line" and row.first_message == "first question"
        storage = await catalog.open("one-bad-line")
        session = await Session.open(storage)
        context = await session.build_session_context()
        assert [message_text(m) for m in context.messages] == ["answer two"]  # the path restarts below it
        warning = load_warning(storage)
        assert warning is not None and "1 unreadable line skipped" in warning
        await session.append_message(UserMessage(content="still works"))
    finally:
        await catalog.close()
