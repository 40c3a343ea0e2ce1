"""The SQLite backend's materialized state (branch segments, per-entry PathState, compaction
start, labels, stats) must agree with the in-memory backend, which walks the tree, on a random
bushy tree — both when built by appends and when bulk-imported."""

from __future__ import annotations

import random
from typing import Any

from treechat.storage.memory import MemoryCatalog
from treechat.storage.sqlite import SqliteCatalog

from .helpers import assistant, compaction, label, model_change, thinking, tools, user


def random_session(seed: int, n: int = 300) -> list:
    """(entry or ("leaf", id)) operations: forks, compactions, labels, settings, moves."""
    rng = random.Random(seed)
    ops: list[Any] = []
    placed: list[str] = []
    leaf: str | None = None
    for i in range(n):
        roll = rng.random()
        if placed and roll < 0.12:  # move the leaf somewhere (the next append forks there)
            leaf = rng.choice(placed)
            ops.append(("leaf", leaf))
            continue
        eid, parent = f"e{i}", leaf
        if roll < 0.15:
            parent = None  # a second root now and then
        kind = rng.random()
        if kind < 0.35:
            e = user(eid, parent, f"question {i}")
        elif kind < 0.7:
            e = assistant(eid, parent, f"answer {i}", model=f"m{i % 3}", inp=i, out=1, cost=0.01)
        elif kind < 0.76 and placed:
            e = compaction(eid, parent, first_kept=rng.choice(placed + ["nowhere"]), retained_tail=rng.random() < 0.3)
        elif kind < 0.82 and placed:
            e = label(eid, parent, rng.choice(placed), rng.choice(["x", "y", None]))
        elif kind < 0.88:
            e = model_change(eid, parent, "p", f"mm{i}")
        elif kind < 0.94:
            e = thinking(eid, parent, rng.choice(["low", "high"]))
        else:
            e = tools(eid, parent, [f"t{i}"])
        ops.append(e)
        placed.append(eid)
        leaf = eid
    return ops


async def replay(storage, ops) -> None:
    for op in ops:
        if isinstance(op, tuple):
            await storage.set_leaf_id(op[1])
        else:
            await storage.append_entry(op.model_copy(deep=True))


async def snapshot(s) -> dict:
    entries = await s.get_entries()
    real = [e.id for e in entries if e.type != "leaf"]
    out = {
        "leaf": await s.get_leaf_id(),
        "stats": await s.get_session_stats(),
        "labels": await s.get_labels(),
        "rows": await s.get_tree_rows(),
        "roots": [e.id for e in await s.get_children(None)],
    }
    for eid in real:
        out[eid] = (
            [e.id for e in await s.get_path_to_root(eid)],
            [e.id for e in await s.get_path_to_root_or_compaction(eid)],
            await s.get_path_state(eid),
            [e.id for e in await s.get_children(eid)],
        )
    return out


async def test_appends_agree_with_memory(tmp_path):
    mem, sql = MemoryCatalog(), await SqliteCatalog.open(tmp_path / "t.db")
    try:
        for seed in (1, 2):
            ops = random_session(seed)
            a, b = await mem.create(session_id=f"s{seed}"), await sql.create(session_id=f"s{seed}")
            await replay(a, ops)
            await replay(b, ops)
            assert await snapshot(b) == await snapshot(a)
    finally:
        await sql.close()


async def test_import_agrees_with_appends(tmp_path):
    sql = await SqliteCatalog.open(tmp_path / "t.db")
    try:
        ops = random_session(3)
        appended = await sql.create(session_id="appended")
        await replay(appended, ops)
        entries = await appended.get_entries()  # markers included, as in a file
        imported, report = await sql.import_session({"id": "imported"}, entries, await appended.get_leaf_id())
        assert report.skipped == 0 and report.problems == []
        assert await snapshot(imported) == await snapshot(appended)
    finally:
        await sql.close()
