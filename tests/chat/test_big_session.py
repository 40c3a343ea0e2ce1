"""A big session opens with its path and reads its whole tree afterwards (`chat_tree`): nothing
that happens meanwhile is lost, and what needs the whole tree waits for it. `LOAD_LATER` is made
small so that a session of a few dozen entries counts as big."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

import treechat.chat.tree as chat_tree
from tests.fake_provider import FakeProvider
from tests.narrow import of
from treechat.chat.events import Header, PathChanged, SessionOpened, TreeLoaded
from treechat.session.session import Session
from treechat.storage.base import SessionStorage, TreeRow
from treechat.storage.model import AssistantMessage, TextContent, UserMessage

from .test_chat import make_chat


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as fp:
        yield fp


async def branchy(catalog: Any) -> tuple[str, list[str], list[str]]:
    """A session of two branches (20 and 10 messages) whose leaf is on the first."""
    storage = await catalog.create(cwd="/w")
    s = await Session.open(storage)
    first: list[str] = []
    for i in range(10):
        first.append(await s.append_message(UserMessage(content=f"question {i}")))
        first.append(await s.append_message(AssistantMessage(content=[TextContent(text=f"answer {i}")],
                                                             provider="p", model="m")))
    await s.move_to(first[9])
    other = []
    for i in range(5):
        other.append(await s.append_message(UserMessage(content=f"other {i}")))
        other.append(await s.append_message(AssistantMessage(content=[TextContent(text=f"reply {i}")],
                                                             provider="p", model="m")))
    await s.move_to(first[-1])
    return storage.session_id, first, other


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Big from 10 entries on; the whole tree is read at once, but arrives only once the gate
    opens (so whatever happens meanwhile is not in what was read)."""
    monkeypatch.setattr(chat_tree, "LOAD_LATER", 10)
    opened = asyncio.Event()
    read = chat_tree.TreeLoad._read

    class Read:
        def __init__(self, columns: Any) -> None:
            self.columns = columns

        async def get_tree_columns(self) -> Any:
            return self.columns

    async def held(self: chat_tree.TreeLoad, storage: Any) -> None:
        columns = await storage.get_tree_columns()
        await opened.wait()
        await read(self, cast(SessionStorage, Read(columns)))  # a stand-in: the one read TreeLoad makes

    monkeypatch.setattr(chat_tree.TreeLoad, "_read", held)
    return opened


async def test_a_big_session_opens_with_its_path_then_its_whole_tree(catalog, fake, tmp_path, gate) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    sid, first, other = await branchy(catalog)
    await chat.resume(sid)
    opened = rec.of(SessionOpened)[-1]
    assert opened.tree_loading >= 30 and opened.tree.path_ids(chat.leaf_id) == first
    assert len(opened.tree) == len(first) and [e.id for e in opened.path] == first  # the transcript has all it needs
    assert opened.header.position == f"{len(first)} entries on this branch · reading the tree…"  # not "1 branch"
    gate.set()
    await chat.whole_tree()
    loaded = rec.of(TreeLoaded)[-1]
    assert loaded.tree is chat.tree and len(chat.tree) >= 30 and chat.tree.siblings(other[0]) == [first[10], other[0]]
    assert isinstance(rec.events[-1], Header) and rec.events[-1].branches == 2


async def test_what_happens_while_the_tree_is_read_is_in_the_whole_tree(catalog, fake, tmp_path, gate) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    sid, first, other = await branchy(catalog)
    await chat.resume(sid)
    await chat.label(first[3], "here")
    await chat.rename("Big one")
    chat.load_tree()  # what the App does after its first frame
    await asyncio.sleep(0)
    load = chat.s.tree_load
    assert load is not None and load.task is not None and not load.task.done(), load and load.task
    move = asyncio.ensure_future(chat.move_to(other[-1]))  # a move needs the whole tree: it waits
    await asyncio.sleep(0.05)
    assert not move.done() and not rec.of(PathChanged)
    gate.set()
    await move
    assert chat.leaf_id == other[-1] and of(TreeRow, chat.tree.get(first[3])).label == "here"
    assert any(r.type == "session_info" for r in chat.tree.by_id.values())
    assert [e.id for e in rec.of(PathChanged)[-1].path][-1] == other[-1]


async def test_a_session_switched_away_from_while_its_tree_is_read(catalog, fake, tmp_path, gate) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    sid, _, _ = await branchy(catalog)
    await chat.resume(sid)
    chat.load_tree()
    await chat.new_session()
    gate.set()
    await asyncio.sleep(0.05)
    assert not rec.of(TreeLoaded) and len(chat.tree) == 0
