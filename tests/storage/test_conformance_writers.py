"""Many writers on one session, run against every backend: two catalogs (two processes or
machines) appending at once, many under the same stale parent, lose nothing and keep a whole
tree; appending at a stale leaf makes a branch, never an overwrite."""

from __future__ import annotations

import asyncio

from treechat.storage import open_catalog

from .helpers import append_all, assistant, ids, user


async def test_concurrent_appends_under_one_parent_from_two_catalogs_all_become_branches(catalog, tmp_path):
    s = await catalog.create(session_id="busy")
    await append_all(s, user("u1", None), assistant("a1", "u1"))
    other = catalog if catalog.kind == "memory" else await open_catalog(catalog.kind, tmp_path)
    try:
        theirs = await other.open("busy")
        # both think a1 is the leaf: every one of these is appended at a stale leaf but the first
        work = [s.append_entry(user(f"m{i}", "a1", f"mine {i}")) for i in range(10)]
        work += [theirs.append_entry(user(f"t{i}", "a1", f"theirs {i}")) for i in range(10)]
        await asyncio.gather(*work)
        # and each goes on below its own prompt, interleaved
        await asyncio.gather(*(x.append_entry(assistant(f"r{p}{i}", f"{p}{i}")) for i in range(10)
                               for p, x in (("m", s), ("t", theirs))))
        again = await catalog.open("busy")
        children = ids(await again.get_children("a1"))
        assert sorted(children) == sorted([f"m{i}" for i in range(10)] + [f"t{i}" for i in range(10)])
        for p in "mt":
            for i in range(10):
                assert ids(await again.get_path_to_root(f"r{p}{i}")) == ["u1", "a1", f"{p}{i}", f"r{p}{i}"]
                assert (await again.get_path_state(f"r{p}{i}")).message_count == 4
        rows = await again.get_tree_rows()
        assert len(rows) == 42 and len({r.id for r in rows}) == 42
        assert (await again.get_session_stats()).entry_count == 42
        assert await again.get_leaf_id() in {r.id for r in rows}  # one of the last appends: the last one won
        # both writers at the tail of a branch at once, again and again: one extends it, one forks
        tail = "rm0"
        for k in range(12):
            await s.poll_appended(), await theirs.poll_appended()  # each has seen the other's (as the app has)
            await asyncio.gather(s.append_entry(user(f"x{k}", tail)), theirs.append_entry(user(f"y{k}", tail)))
            tail = f"x{k}" if k % 2 else f"y{k}"
        path = ids(await again.get_path_to_root(tail))
        assert path[:4] == ["u1", "a1", "m0", "rm0"] and len(path) == 16
        assert (await again.get_path_state(tail)).depth == 16
    finally:
        if other is not catalog:
            await other.close()
