"""Other writers, live (treechat.chat.live): entries another process or machine appends reach the
controller through the path its own appends take; the leaf follows only an entry made right
under it while idle. Run on every backend another writer can reach (a second catalog on the
same store stands for the other process or machine)."""

from __future__ import annotations

import asyncio

import pytest

from tests.fake_provider import FakeProvider
from treechat.chat.events import EntryAppended, Header, LabelChanged, Notice, SessionsChanged
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, UserMessage

from .test_chat import make_chat, seeded, wait_until


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
async def other(catalog, tmp_path):
    """A second catalog on the same store: the other process or machine."""
    if catalog.kind == "memory":
        pytest.skip("nothing else can write to an in-memory store")
    theirs = await open_catalog(catalog.kind, tmp_path)
    yield theirs
    await theirs.close()


async def test_an_entry_made_under_our_leaf_is_adopted_like_our_own(catalog, other, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    theirs = await Session.open(await other.open(chat.session_id))
    assert theirs.leaf_id == chat.leaf_id == ids[-1]
    before = len(rec.events)
    u = await theirs.append_message(UserMessage(content="from the other machine"))
    a = await theirs.append_message(AssistantMessage(content=[TextContent(text="its answer")], provider="openai",
                                                     model="fake-model"))
    assert await chat.poll_others() == 2
    assert chat.leaf_id == a and chat.tree.path_ids(a)[-2:] == [u, a]
    appended = [e for e in rec.events[before:] if isinstance(e, EntryAppended)]
    assert [(e.entry.id, e.shown, e.leaf_id) for e in appended] == [(u, True, u), (a, True, a)]
    assert any(isinstance(e, Header) for e in rec.events[before:])  # (the status only when it changed: no usage here)
    assert not any(isinstance(e, Notice) for e in rec.events[before:])  # it is on screen: nothing to say
    assert (await chat.session.path_state()).message_count == 6
    assert await chat.poll_others() == 0  # each entry once
    # what we send next continues their conversation
    fake.script_openai(["ok"])
    await chat.send("and mine")
    await chat.wait_idle()
    branch = [e.id for e in await chat.session.get_branch()]
    assert branch[:6] == [*ids, u, a]


async def test_entries_elsewhere_join_the_tree_and_our_leaf_stays(catalog, other, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    theirs = await Session.open(await other.open(chat.session_id))
    await chat.move_to(ids[1])  # we went back; they go on from the old leaf
    before = len(rec.events)
    u = await theirs.append_message(UserMessage(content="their branch"))
    await theirs.append_label(ids[0], "theirs")
    await theirs.append_session_info("Named elsewhere")
    assert await chat.poll_others() == 3
    assert chat.leaf_id == ids[1] and u in chat.tree.by_id
    assert chat.tree.by_id[ids[0]].label == "theirs"
    events = rec.events[before:]
    assert [e.shown for e in events if isinstance(e, EntryAppended)] == [False, False, False]
    assert [(e.target_id, e.label) for e in events if isinstance(e, LabelChanged)] == [(ids[0], "theirs")]
    assert [e.title for e in events if isinstance(e, Header)][-1] == "Named elsewhere"
    assert any(isinstance(e, Notice) and "joined this session's tree" in e.text for e in events)


async def test_nothing_is_adopted_while_previewing(catalog, other, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    theirs = await Session.open(await other.open(chat.session_id))
    await chat.preview(ids[1])
    u = await theirs.append_message(UserMessage(content="under our leaf, while we look elsewhere"))
    assert await chat.poll_others() == 1
    assert chat.leaf_id == ids[-1] and chat.preview_id == ids[1] and u in chat.tree.by_id
    assert not rec.of(EntryAppended)[-1].shown


async def test_follow_store_brings_another_writers_entries_and_list_changes(catalog, other, fake, tmp_path) -> None:
    chat, rec = await make_chat(catalog, fake, tmp_path)
    ids = await seeded(chat)
    task = asyncio.create_task(chat.follow_store())
    try:
        theirs = await Session.open(await other.open(chat.session_id))
        u = await theirs.append_message(UserMessage(content="live from elsewhere"))
        await wait_until(lambda: chat.leaf_id == u, "the other writer's entry to be adopted")
        assert [e.entry.id for e in rec.of(EntryAppended)][-1] == u
        count = len(rec.of(SessionsChanged))
        await other.create(cwd="/elsewhere")  # a new session on the other machine: the list changes
        await wait_until(lambda: len(rec.of(SessionsChanged)) > count, "a sessions-list refresh")
        assert chat.leaf_id == u and ids[-1] in chat.tree.by_id
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
