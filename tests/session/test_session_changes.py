"""A Session tells `changes` of every append and leaf move, synchronously, before the call
returns, with the entry as stored; a move to where the leaf already is tells nothing."""

from __future__ import annotations

from treechat.session.events import Appended, LeafMoved, SessionChange
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import LabelEntry, MessageEntry, UserMessage


async def test_appends_and_moves_are_told_in_order_with_the_stored_entry() -> None:
    session = await Session.open(await MemoryCatalog().create())
    seen: list[SessionChange] = []
    leaf_when_told: list[str | None] = []

    def listen(change: SessionChange) -> None:
        seen.append(change)
        leaf_when_told.append(session.leaf_id)

    stop = session.changes.subscribe(listen)
    first = await session.append_message(UserMessage(content="hi"))
    label = await session.append_label(first, "start")
    await session.move_to(first)
    await session.move_to(first)  # already there: no move, nothing told
    await session.reset_leaf()
    stop()
    await session.append_message(UserMessage(content="unheard"))

    assert [type(c) for c in seen] == [Appended, Appended, LeafMoved, LeafMoved]
    appended = [c.entry for c in seen if isinstance(c, Appended)]
    assert isinstance(appended[0], MessageEntry) and appended[0].id == first
    assert isinstance(appended[1], LabelEntry) and appended[1].id == label and appended[1].target_id == first
    assert appended[0] == await session.get_entry(first)  # the entry as the storage has it
    assert [c.leaf_id for c in seen if isinstance(c, LeafMoved)] == [first, None]
    assert leaf_when_told == [first, label, first, None]  # told after the leaf moved, before the call returned


async def test_an_adopted_entry_is_told_like_an_append() -> None:
    catalog = MemoryCatalog()
    session = await Session.open(await catalog.create())
    seen: list[SessionChange] = []
    session.changes.subscribe(seen.append)
    entry = MessageEntry(id="e1", parent_id=None, message=UserMessage(content="from elsewhere"))
    session.adopt(entry)
    assert seen == [Appended(entry)] and session.leaf_id == "e1"
