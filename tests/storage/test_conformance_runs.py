"""Runs writing their own branches (issue 39), on every backend: `append_entry(move_leaf=False)`
stores an entry and leaves the stored leaf where the person put it. Two runs appending at once on
two branches, the person acting meanwhile: reopened, the leaf is the person's and every entry is
there under its parent, with no `leaf` line written per entry (JSONL: one, when it closes)."""

from __future__ import annotations

import asyncio

from treechat.storage import open_catalog
from treechat.storage.base import EntryCursor

from .helpers import append_all, assistant, ids, tool_result, user


async def _reopened(catalog, tmp_path, session_id: str):
    """The session as a new process would find it (memory: the same catalog, nothing to close)."""
    if catalog.kind == "memory":
        return catalog, await catalog.open(session_id)
    await catalog.close()
    again = await open_catalog(catalog.kind, tmp_path)
    return again, await again.open(session_id)


async def _run(storage, name: str, parent: str, turns: int, *, follow: bool = False) -> list[str]:
    """A run's appends, one after the other under its own tip: prompt, then reply and a tool's result."""
    tip, written = parent, []
    for k in range(turns):
        for entry in (user(f"{name}u{k}", tip, f"{name} {k}"), assistant(f"{name}a{k}", f"{name}u{k}"),
                      tool_result(f"{name}t{k}", f"{name}a{k}")):
            await storage.append_entry(entry, move_leaf=follow)
            await asyncio.sleep(0)  # the other run's turn
            written.append(entry.id)
        tip = f"{name}t{k}"
    return written


async def test_two_runs_on_two_branches_leave_the_persons_leaf(catalog, tmp_path):
    s = await catalog.create(session_id="runs")
    await append_all(s, user("u1", None), assistant("a1", "u1"), user("u2", "a1"), assistant("a2", "u2"))

    async def person() -> None:
        await asyncio.sleep(0)
        await s.set_leaf_id("a1")  # a move while the runs go
        await s.append_entry(user("mine", "a1", "the person's own prompt"))  # and a send elsewhere

    a, b, _ = await asyncio.gather(_run(s, "A", "a2", 4), _run(s, "B", "u1", 4), person())
    assert await s.get_leaf_id() == "mine"
    catalog2, again = await _reopened(catalog, tmp_path, "runs")
    try:
        assert await again.get_leaf_id() == "mine"
        assert ids(await again.get_path_to_root("At3")) == ["u1", "a1", "u2", "a2", *a]
        assert ids(await again.get_path_to_root("Bt3")) == ["u1", *b]
        assert ids(await again.get_path_to_root("mine")) == ["u1", "a1", "mine"]
        assert (await again.get_path_state("At3")).depth == 4 + len(a)
        rows = await again.get_tree_rows()
        assert len(rows) == 4 + len(a) + len(b) + 1 and len({r.id for r in rows}) == len(rows)
        markers = await again.get_entries(EntryCursor(types=["leaf"]))
        assert len(markers) <= 2  # the person's move, and JSONL's one line putting the leaf back: never one per entry
    finally:
        if catalog2 is not catalog:
            await catalog2.close()


async def test_a_run_the_person_stays_with_moves_the_leaf_and_one_elsewhere_does_not(catalog, tmp_path):
    s = await catalog.create(session_id="follow")
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    here, elsewhere = await asyncio.gather(_run(s, "H", "a1", 3, follow=True), _run(s, "E", "u1", 3))
    assert await s.get_leaf_id() == here[-1]
    catalog2, again = await _reopened(catalog, tmp_path, "follow")
    try:
        assert await again.get_leaf_id() == here[-1]
        assert ids(await again.get_path_to_root(elsewhere[-1])) == ["u1", *elsewhere]
        assert (await again.get_session_stats()).entry_count == 2 + len(here) + len(elsewhere)
    finally:
        if catalog2 is not catalog:
            await catalog2.close()


async def test_setting_the_leaf_where_it_is_puts_it_back_after_a_run_wrote_elsewhere(catalog, tmp_path):
    """What the controller does when a run ends ("settle"): no marker where the stored leaf is
    right already; on JSONL, one line naming the person's leaf."""
    s = await catalog.create(session_id="settle")
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    await s.set_leaf_id("a1")  # where the file says it is: nothing written
    assert await s.get_entries(EntryCursor(types=["leaf"])) == []
    await s.append_entry(user("r1", "u1", "a run's prompt"), move_leaf=False)
    await s.set_leaf_id("a1")
    assert len(await s.get_entries(EntryCursor(types=["leaf"]))) <= 1
    await s.set_leaf_id("a1")  # again: nothing more
    assert len(await s.get_entries(EntryCursor(types=["leaf"]))) <= 1
    catalog2, again = await _reopened(catalog, tmp_path, "settle")
    try:
        assert await again.get_leaf_id() == "a1"
        assert ids(await again.get_children("u1")) == ["a1", "r1"]
    finally:
        if catalog2 is not catalog:
            await catalog2.close()
