"""SQLite's streamed import (issue 26): batches in bounded memory, and still all or nothing.

The streamed import must store exactly what the whole-file import stores (same paths, states,
labels, aggregates, search), across batch boundaries: the batch size is cut to a few entries so
forks and compactions reach back past the entries at hand. A session being imported is invisible
until its last batch commits; one whose process died is deleted by the next catalog opened."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.storage.base import SessionNotFoundError
from treechat.storage.imports import stream_scan
from treechat.storage.imports.records import read_records
from treechat.storage.imports.stream_scan import FilePlan, plan_file
from treechat.storage.sqlite import SqliteCatalog, stream_import
from treechat.storage.sqlite.stream_import import ImportStopped

SID = "stream-1"


def planned(file: Path) -> FilePlan:
    """The plan of a file the streamed import takes (not one for the whole-file reader)."""
    plan = plan_file(file)
    assert plan is not None, file
    return plan


def _ts(n: int) -> str:
    return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.{n // 3600:03d}Z"


def tricky_lines(n: int = 400) -> list[str]:
    """A session of `n` chained messages with what crosses batches: forks from far back, a second
    child of an old entry, compactions keeping an old entry (on the path, and not), labels set,
    changed and cleared, settings, a name; and lines to skip (not JSON, a duplicate id, one only
    pydantic refuses), half a UTF-16 pair, and a leaf marker that ends elsewhere."""
    out = [json.dumps({"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/x"})]
    k = 0

    def add(obj: dict) -> None:
        nonlocal k
        k += 1
        obj.setdefault("timestamp", _ts(k))
        out.append(json.dumps(obj))

    def msg(eid: str, parent: str | None, role: str, text: str) -> None:
        m: dict = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}],
                   "timestamp": 1767225600000 + k}
        if role == "assistant":
            m.update(api="anthropic-messages", provider="anthropic", model="claude", stopReason="stop",
                     usage={"input": 10 + k, "output": 5, "cacheRead": 1, "cacheWrite": 0, "totalTokens": 16 + k,
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001}})
        add({"type": "message", "id": eid, "parentId": parent, "message": m})

    parent = None
    for i in range(n):
        eid = f"m{i:04d}"
        msg(eid, parent, "user" if i % 2 == 0 else "assistant", f"needle{i} words about branch {i % 7}")
        parent = eid
        if i == 20:
            add({"type": "model_change", "id": "mc1", "parentId": parent, "provider": "openai", "modelId": "gpt"})
            add({"type": "thinking_level_change", "id": "tl1", "parentId": "mc1", "thinkingLevel": "high"})
            add({"type": "active_tools_change", "id": "at1", "parentId": "tl1", "activeToolNames": ["read"]})
            parent = "at1"
        if i == 40:
            add({"type": "label", "id": "l1", "parentId": parent, "targetId": "m0003", "label": "first"})
            add({"type": "session_info", "id": "si1", "parentId": "l1", "name": "  Streamed  "})
            parent = "si1"
        if i == 150:
            add({"type": "compaction", "id": "c1", "parentId": parent, "summary": "so far", "firstKeptEntryId": "m0100",
                 "tokensBefore": 100})
            parent = "c1"
        if i == 260:
            add({"type": "label", "id": "l2", "parentId": parent, "targetId": "m0003", "label": "renamed"})
            add({"type": "label", "id": "l3", "parentId": "l2", "targetId": "m0200", "label": "gone soon"})
            add({"type": "label", "id": "l4", "parentId": "l3", "targetId": "m0200", "label": ""})
            parent = "l4"
    # forks from far back: a new branch under m0003, a second child of m0010, and a compaction on
    # the fork keeping an entry that is not on its path
    msg("f1", "m0003", "user", "a fork from far back")
    msg("f2", "f1", "assistant", "on the fork")
    msg("f3", "m0010", "user", "another child of an old entry")
    add({"type": "compaction", "id": "c2", "parentId": "f2", "summary": "fork summary", "firstKeptEntryId": "m0300",
         "tokensBefore": 5})
    msg("f4", "c2", "user", "after the fork's compaction \ud83d half a pair")
    out.append("this line is not JSON")
    add({"type": "message", "id": "m0005", "parentId": None, "message": {"role": "user", "content": "dup"}})
    add({"type": "message", "id": "nocontent", "parentId": "f4", "message": {"role": "user"}})
    add({"type": "leaf", "id": "lf1", "parentId": "f4", "targetId": "m0250"})  # resume back on the main line
    return out


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


async def snapshot(catalog: SqliteCatalog, sid: str) -> dict:
    s = await catalog.open(sid)
    rows = await s.get_tree_rows()
    by_entry = {}
    # every fifth entry (5 and the batch of 7 are coprime: every place in a batch is seen) and the
    # entries the tests name; each is three queries, so all 400 made these the suite's slowest tests
    for r in [r for i, r in enumerate(rows) if i % 5 == 0 or r.id in ("m0151", "c2", "m0250")]:
        state = await s.get_path_state(r.id)
        path = [e.id for e in await s.get_path_to_root_or_compaction(r.id)]
        by_entry[r.id] = (state, path, [e.id for e in await s.get_path_to_root(r.id)])
    (summary,) = [x for x in await catalog.list() if x.id == sid]
    # the streamed import's text is in the bulk index (fts.py): ranks and order must be the same
    # as from the index the whole-file import wrote — one term, a phrase, two terms (bm25 with
    # counted matches), a short term (a LIKE scan), a filter
    hits = {q: [(h.entry_id, h.snippet, h.rank) for h in await catalog.search(q)]
            for q in ("needle12", '"words about branch 3"', "needle1 branch", "e1", "role:user needle2")}
    return {"rows": rows, "by_entry": by_entry, "leaf": await s.get_leaf_id(), "labels": await s.get_labels(),
            "stats": await s.get_session_stats(), "meta": (await s.get_metadata()).name,
            "summary": (summary.entry_count, summary.message_count, summary.name, summary.first_message,
                        summary.modified_at, summary.cost_total),
            "search": hits,
            "entries": [e.id for e in await s.get_entries()]}


async def fts_settings(catalog: SqliteCatalog) -> tuple[object, object]:
    """The (crisismerge, hashsize) of the search index appends use: FTS5's defaults, which no
    import changes (a big one writes the bulk index; an older treechat's raised it while it ran)."""
    got = dict(await catalog.db.run(lambda c: c.execute("SELECT k, v FROM entry_search_config").fetchall()))
    return got.get("crisismerge"), got.get("hashsize", 2**20)


APPEND_SETTINGS = (16, 2**20)


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_import, "BATCH", 7)


@pytest.mark.parametrize("chunk", [1 << 20, 300])
async def test_streamed_import_stores_what_the_whole_file_import_stores(tmp_path, small_batches, monkeypatch, chunk):
    # 300 bytes: both passes read the file in many chunks, the lines to repair (not UTF-8, half
    # a UTF-16 pair) in chunks of their own among clean ones (stream_scan._numbered)
    monkeypatch.setattr(stream_scan, "_CHUNK", chunk)
    file = write(tmp_path / "s.jsonl", tricky_lines())
    raw = file.read_bytes().split(b"\n")
    side = [b'{"type":"message","id":"u8","parentId":"m0050","timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":"caf\xc3\xa9 \xff bytes"}}',
            b'{"type":"message","id":"u9","parentId":"u8","timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":"half \\udc00 a pair"}}']
    file.write_bytes(b"\n".join(raw[:120] + side + raw[120:]))
    whole = await SqliteCatalog.open(tmp_path / "whole.db")
    streamed = await SqliteCatalog.open(tmp_path / "streamed.db")
    try:
        header, records, report = read_records(file)
        _, expected_report = await whole.import_records(header, records, report)
        plan = plan_file(file)
        assert plan is not None  # a v3 file whose parents come first: streamed
        storage, got_report = await streamed.import_plan(plan)
        assert storage.session_id == SID
        assert (got_report.entries, got_report.skipped_lines, got_report.duplicate_ids) == \
            (expected_report.entries, expected_report.skipped_lines, expected_report.duplicate_ids)
        want, got = await snapshot(whole, SID), await snapshot(streamed, SID)
        for key in want:
            assert got[key] == want[key], key
        assert all(got["search"].values()), got["search"]  # every query finds something
        assert got["leaf"] == "m0250" and got["labels"] == {"m0003": "renamed"} and got["meta"] == "Streamed"
        assert got["by_entry"]["m0151"][1][0] == "m0100"  # after c1: from the entry it kept, far back
        assert got["by_entry"]["c2"][1][0] == "m0000"  # the fork's compaction keeps an entry off its path
        assert await fts_settings(streamed) == APPEND_SETTINGS
    finally:
        await whole.close()
        await streamed.close()


async def test_files_the_stream_cannot_take_are_left_to_the_whole_file_reader(tmp_path):
    lines = tricky_lines(10)
    child_first = [lines[0], lines[2], lines[1], *lines[3:]]  # a parent after its child
    assert plan_file(write(tmp_path / "a.jsonl", child_first)) is None
    v2 = [json.dumps({"type": "session", "version": 2, "id": "old", "timestamp": _ts(0)}), *lines[1:]]
    assert plan_file(write(tmp_path / "b.jsonl", v2)) is None
    assert plan_file(write(tmp_path / "c.jsonl", lines)) is not None


@pytest.mark.parametrize("leaf", ["m0200", "m0000"])
async def test_a_last_line_with_entries_under_it_is_streamed_after_its_parent(tmp_path, small_batches, leaf):
    """A treechat export whose leaf has entries below it (Pi resumes at the last line): the leaf
    entry comes last, after its children. It streams: that line is read right after its parent
    (a root: first), and the session is what the whole-file reader makes of the file."""
    lines = tricky_lines()[:-1]  # (no leaf marker: the export writes none)
    at = next(i for i, line in enumerate(lines) if f'"id": "{leaf}"' in line)
    file = write(tmp_path / "s.jsonl", [*lines[:at], *lines[at + 1:], lines[at]])
    plan = plan_file(file)
    assert plan is not None and plan.hoisted is not None and plan.leaf_id == leaf and plan.marker_id is None
    whole = await SqliteCatalog.open(tmp_path / "whole.db")
    streamed = await SqliteCatalog.open(tmp_path / "streamed.db")
    try:
        await whole.import_records(*read_records(file))
        await streamed.import_plan(plan)
        want, got = await snapshot(whole, SID), await snapshot(streamed, SID)
        assert got["leaf"] == want["leaf"] == leaf
        for key in ("labels", "stats", "meta"):
            assert got[key] == want[key], key
        assert got["summary"][:3] + got["summary"][4:] == want["summary"][:3] + want["summary"][4:]
        assert got["summary"][3] == "needle0 words about branch 0"  # the root's (the whole file: the first line's)
        assert sorted(got["search"]["needle12"]) == sorted(want["search"]["needle12"])  # (ties: newest first)
        for eid in [*want["by_entry"], leaf, "f1", "f4"]:  # the same entries, whatever their place in the store
            a, b = await whole.open(SID), await streamed.open(SID)
            assert await b.get_path_state(eid) == await a.get_path_state(eid), eid
            assert [e.id for e in await b.get_path_to_root_or_compaction(eid)] == \
                [e.id for e in await a.get_path_to_root_or_compaction(eid)], eid
        assert sorted(got["rows"], key=lambda r: r.id) == sorted(want["rows"], key=lambda r: r.id)
    finally:
        await whole.close()
        await streamed.close()
    if leaf == "m0200":  # its parent after the first line under it: left to the whole-file reader
        moved = [*lines[:at], *lines[at + 1:], lines[at]]
        parent = next(i for i, line in enumerate(moved) if '"id": "m0199"' in line)
        child = next(i for i, line in enumerate(moved) if f'"parentId": "{leaf}"' in line)
        late = [*moved[:parent], *moved[parent + 1:child + 1], moved[parent], *moved[child + 1:]]
        assert plan_file(write(tmp_path / "late.jsonl", late)) is None


async def test_a_stopped_import_leaves_nothing(tmp_path, small_batches):
    file = write(tmp_path / "s.jsonl", tricky_lines())
    catalog = await SqliteCatalog.open(tmp_path / "t.db")
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 5  # after five batches are committed

    try:
        with pytest.raises(ImportStopped):
            await catalog.import_plan(planned(file), stop=stop)
        assert await catalog.list() == [] and not await catalog.has_session(SID)
        assert await catalog.search("needle12") == []
        left = await catalog.db.run(lambda c: c.execute("SELECT count(*) FROM session_entries").fetchone()[0])
        assert left == 0 and await fts_settings(catalog) == APPEND_SETTINGS
        storage, _ = await catalog.import_plan(planned(file))
        assert [s.id for s in await catalog.list()] == [SID]
    finally:
        await catalog.close()


DRIVER = r"""
import asyncio, os, sys
from pathlib import Path
from treechat.storage.sqlite import SqliteCatalog, stream_import
from treechat.storage.imports.stream_scan import plan_file

stream_import.BATCH = 7
async def main():
    catalog = await SqliteCatalog.open(Path(sys.argv[1]))
    asked = []
    def stop():
        asked.append(1)
        if len(asked) == 4:  # three batches committed: say so, and die when told (like kill -9)
            print("ready", flush=True)
            sys.stdin.readline()
            os._exit(9)
        return False
    await catalog.import_plan(plan_file(Path(sys.argv[2])), stop=stop)
asyncio.run(main())
"""


async def test_a_session_being_imported_is_invisible_and_gone_once_its_process_died(tmp_path):
    file = write(tmp_path / "s.jsonl", tricky_lines())
    db = tmp_path / "t.db"
    child = subprocess.Popen([sys.executable, "-c", DRIVER, str(db), str(file)], stdin=subprocess.PIPE,  # noqa: ASYNC220  a start, waited on below on a thread
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and (await asyncio.to_thread(child.stdout.readline)).strip() == "ready"
        catalog = await SqliteCatalog.open(db)  # the importer is alive: its batches stay, unseen
        try:
            stored = await catalog.db.run(lambda c: c.execute("SELECT count(*) FROM session_entries").fetchone()[0])
            assert stored > 0
            assert await catalog.list() == [] and not await catalog.has_session(SID)
            assert await catalog.search("needle1") == []
            with pytest.raises(SessionNotFoundError):
                await catalog.open(SID)
            with pytest.raises(SessionNotFoundError):
                await catalog.open("stream")  # by prefix neither
        finally:
            await catalog.close()
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.flush()
        assert await asyncio.to_thread(child.wait, 30) == 9
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    catalog = await SqliteCatalog.open(db)  # the importer died: what it stored is deleted
    try:
        counts = await catalog.db.run(lambda c: c.execute(
            "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM session_entries),"
            " (SELECT count(*) FROM branches), (SELECT count(*) FROM entry_search),"
            " (SELECT count(*) FROM entry_search_bulk)").fetchone())
        assert counts == (0, 0, 0, 0, 0) and await fts_settings(catalog) == APPEND_SETTINGS
        await catalog.import_plan(planned(file))
        assert [s.id for s in await catalog.list()] == [SID]
    finally:
        await catalog.close()


async def test_force_replaces_a_session_in_one_transaction(tmp_path, small_batches):
    file = write(tmp_path / "s.jsonl", tricky_lines())
    catalog = await SqliteCatalog.open(tmp_path / "t.db")
    try:
        await catalog.import_plan(planned(file))
        before = await snapshot(catalog, SID)
        with pytest.raises(ImportStopped):  # stopped half-way: the old session is still whole
            await catalog.import_plan(planned(file), replace=True, stop=iter([False] * 5 + [True]).__next__)
        assert await snapshot(catalog, SID) == before
        await catalog.import_plan(planned(file), replace=True)
        assert await snapshot(catalog, SID) == before
    finally:
        await catalog.close()
