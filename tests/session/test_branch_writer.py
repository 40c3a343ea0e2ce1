"""A run's branch writer (`Session.branch`), on every backend: it appends under its own tip; the
leaf moves with it only while the person is at that tip; each append is told tagged with its run;
several writers at once interleave nothing; reopened, the leaf is the person's."""

from __future__ import annotations

import asyncio

from treechat.session.events import Appended, SessionChange
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import MessageEntry, UserMessage, message_text


async def _prompt(session: Session, text: str) -> str:
    return await session.append_message(UserMessage(content=text))


async def test_a_writer_at_the_leaf_takes_the_leaf_along_until_the_person_moves(catalog) -> None:
    session = await Session.open(await catalog.create())
    start = await _prompt(session, "start")
    seen: list[SessionChange] = []
    session.changes.subscribe(seen.append)
    writer = session.branch(start, run="r1")
    first = await writer.append_message(UserMessage(content="run 1"))
    assert writer.tip == first and session.leaf_id == first  # the person stays at the run's live end
    await session.move_to(start)  # and goes elsewhere
    second = await writer.append_message(UserMessage(content="run 2"))
    assert writer.tip == second and session.leaf_id == start
    assert (await session.get_entry(second)).parent_id == first  # type: ignore[union-attr]
    assert [c.run for c in seen if isinstance(c, Appended)] == ["r1", "r1"]
    assert [e.id for e in await writer.get_branch()] == [start, first, second]
    assert message_text((await writer.build_session_context()).messages[-1]) == "run 2"
    await session.move_to(second)  # back on the run's tip: the leaf follows again
    third = await writer.append_message(UserMessage(content="run 3"))
    assert session.leaf_id == third


async def test_a_writer_at_rest_follows_the_leaf_and_pins_where_the_run_starts(catalog) -> None:
    session = await Session.open(await catalog.create())
    a = await _prompt(session, "a")
    writer = session.branch()
    assert writer.follows_leaf and writer.tip == a
    b = await _prompt(session, "b")
    assert writer.tip == b  # at rest it is wherever the person is
    writer.pin(run="r1")
    await session.move_to(a)
    c = await writer.append_message(UserMessage(content="c"))
    assert (await session.get_entry(c)).parent_id == b and session.leaf_id == a  # type: ignore[union-attr]


async def test_two_writers_and_the_person_at_once_interleave_nothing_and_reopen_at_the_person(catalog, tmp_path) -> None:
    storage = await catalog.create(session_id="many")
    session = await Session.open(storage)
    root = await _prompt(session, "root")
    left, right = session.branch(root, run="L"), session.branch(root, run="R")
    await session.move_to(None)  # the person is elsewhere from the start

    async def run(writer, name: str) -> list[str]:
        return [await writer.append_message(UserMessage(content=f"{name}{k}")) for k in range(12)]

    async def person() -> str:
        await asyncio.sleep(0)
        return await _prompt(session, "mine")

    lefts, rights, mine = await asyncio.gather(run(left, "L"), run(right, "R"), person())
    assert session.leaf_id == mine
    for ids in (lefts, rights):
        path = [e.id for e in await session.get_branch(ids[-1])]
        assert path == [root, *ids]  # each run's entries one under the other, nothing of the other's between
    await session.settle()
    if catalog.kind == "memory":
        again = storage
    else:
        await catalog.close()
        other = await open_catalog(catalog.kind, tmp_path)
        again = await other.open("many")
    try:
        assert await again.get_leaf_id() == mine
        texts = [message_text(e.message) for e in await again.get_entries() if isinstance(e, MessageEntry)]
        assert sorted(texts) == sorted(["root", "mine", *(f"L{k}" for k in range(12)), *(f"R{k}" for k in range(12))])
    finally:
        if catalog.kind != "memory":
            await other.close()
