"""Checkpoints on every backend (the `catalog` fixture is parametrised): what edit/write record is
an immutable entry on the tree, so the file history survives a reopen, follows each branch,
comes along with a fork and with a Pi JSONL export, and a restore puts the files back."""

from __future__ import annotations

import io
import json

from tests.narrow import of
from treechat.agent.tools.workfolder import Boundary
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from treechat.workspace.blobs import digest
from treechat.workspace.history import CUSTOM_TYPE, FileHistory, path_ids_of
from treechat.workspace.journal import Journal
from treechat.workspace.recorder import SessionRecorder
from treechat.workspace.restore import apply_restore, plan_restore


async def tool_turn(session: Session, recorder: SessionRecorder, call_id: str, tool: str, path: str,
                    before: bytes | None, after: bytes | None) -> tuple[str, str]:
    """assistant (asks) → checkpoint → tool result, as the agent writes them: (checkpoint id, result id)."""
    await session.append_message(AssistantMessage(content=[ToolCall(id=call_id, name=tool, arguments={"path": path})],
                                                  stop_reason="toolUse"))
    recorded = await recorder.record(tool, call_id, path, before, after)
    result = await session.append_message(ToolResultMessage(tool_call_id=call_id, tool_name=tool, content=[]))
    assert recorded.checkpoint_id is not None
    return recorded.checkpoint_id, result


async def history_at(storage, leaf: str | None) -> dict[str, str | None]:
    return (await FileHistory.load(storage)).state_at(await path_ids_of(storage, leaf))


async def test_checkpoints_survive_a_reopen_follow_branches_and_come_with_a_fork(catalog, tmp_path) -> None:
    path = str(tmp_path / "work" / "notes.txt")
    storage = await catalog.create(cwd=str(tmp_path / "work"))
    session = await Session.open(storage)
    history = FileHistory()
    recorder = SessionRecorder(session, history)
    u1 = await session.append_message(UserMessage(content="make notes"))
    cp1, t1 = await tool_turn(session, recorder, "c1", "write", path, None, b"one\n")
    cp2, t2 = await tool_turn(session, recorder, "c2", "edit", path, b"one\n", b"one\ntwo\n")
    # one blob per distinct content along the path: the second checkpoint carries only "two"'s
    entries = {e.id: e for e in await storage.find_entries("custom")}
    assert entries[cp1].custom_type == CUSTOM_TYPE and entries[cp1].parent_id != u1
    assert set(entries[cp1].data["blobs"]) == {digest(b"one\n")}
    assert set(entries[cp2].data["blobs"]) == {digest(b"one\ntwo\n")}
    # another branch from the prompt: its own file history
    await session.move_to(u1)
    cp3, t3 = await tool_turn(session, recorder, "c3", "write", path, None, b"other\n")
    kind, again = catalog.kind, None
    if kind != "memory":  # the same store opened again
        await catalog.close()
        catalog = again = await open_catalog(kind, tmp_path)
        storage = await catalog.open(storage.session_id)
    try:
        assert await history_at(storage, t2) == {path: digest(b"one\ntwo\n")}
        assert await history_at(storage, t1) == {path: digest(b"one\n")}
        assert await history_at(storage, u1) == {path: None}  # before the write: no file
        assert await history_at(storage, t3) == {path: digest(b"other\n")}
        loaded = await FileHistory.load(storage)
        assert loaded.blob(digest(b"one\ntwo\n")) == b"one\ntwo\n"
        assert [cp.entry_id for cp, _ in loaded.changes_of(path)] == [cp1, cp2, cp3]
        # a fork of the first branch carries its file history, and only that branch's
        fork = await catalog.fork(storage.session_id, t2)
        forked = await FileHistory.load(fork)
        assert forked.state_at(await path_ids_of(fork, t2)) == {path: digest(b"one\ntwo\n")}
        assert forked.blob(digest(b"one\n")) == b"one\n" and forked.blob(digest(b"other\n")) is None
    finally:
        if again is not None:
            await again.close()


async def test_restore_and_undo_against_the_disk(catalog, tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    notes = work / "notes.txt"
    storage = await catalog.create(cwd=str(work))
    session = await Session.open(storage)
    history = FileHistory()
    recorder = SessionRecorder(session, history)
    u1 = await session.append_message(UserMessage(content="make notes"))
    notes.write_text("v1\n")
    await tool_turn(session, recorder, "c1", "write", str(notes), None, b"v1\n")
    notes.write_text("v2\n")
    _, leaf = await tool_turn(session, recorder, "c2", "edit", str(notes), b"v1\n", b"v2\n")
    journal = Journal(tmp_path / "home", storage.session_id)
    loaded = await FileHistory.load(storage)
    here = Boundary.of(work)

    # to before the write: the file goes; back to the leaf: it comes back
    plan = plan_restore(storage.session_id, u1, await path_ids_of(storage, u1), loaded, journal, here)
    assert [(s.shown, s.removes, s.blocked) for s in plan.steps] == [("notes.txt", True, "")]
    assert apply_restore(plan, loaded, journal, here).removed == ["notes.txt"] and not notes.exists()
    plan = plan_restore(storage.session_id, leaf, await path_ids_of(storage, leaf), loaded, journal, here)
    assert apply_restore(plan, loaded, journal, here).written == ["notes.txt"] and notes.read_text() == "v2\n"

    # someone else changes it: not overwritten without force
    notes.write_text("mine\n")
    plan = plan_restore(storage.session_id, u1, await path_ids_of(storage, u1), loaded, journal, here)
    assert [s.blocked for s in plan.steps] == ["changed on disk since treechat last wrote it"]
    assert apply_restore(plan, loaded, journal, here).changed == 0 and notes.read_text() == "mine\n"
    assert apply_restore(plan, loaded, journal, here, force=True).removed == ["notes.txt"]
    # what the forced restore replaced comes back with the undo, from the journal on disk
    from treechat.workspace.restore import undo_last

    again = Journal(tmp_path / "home", storage.session_id)
    assert undo_last(again, loaded, here).written == ["notes.txt"] and notes.read_text() == "mine\n"


async def test_the_pi_jsonl_export_keeps_the_checkpoints(catalog, tmp_path) -> None:
    from treechat.cli.storage import stream_export
    from treechat.storage.session_file import read_session_file

    path = str(tmp_path / "f.txt")
    storage = await catalog.create(cwd=str(tmp_path))
    session = await Session.open(storage)
    recorder = SessionRecorder(session, FileHistory())
    await session.append_message(UserMessage(content="go"))
    _, leaf = await tool_turn(session, recorder, "c1", "write", path, None, b"content\n")
    out = tmp_path / "export.jsonl"
    await stream_export(storage, str(out), io.StringIO(), show_progress=False)  # (to a file: stdout unused)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    custom = [line for line in lines if line.get("type") == "custom"]
    assert len(custom) == 1 and custom[0]["customType"] == CUSTOM_TYPE and custom[0]["data"]["files"][0]["path"] == path
    header, entries, _, _ = read_session_file(out)
    imported, _ = await catalog.import_session({**header, "id": "imported-1"}, entries, None)
    assert await history_at(imported, leaf) == {path: digest(b"content\n")}


async def test_a_session_with_checkpoints_reads_as_pi_reads_it(catalog) -> None:
    """Pi 0.73.1 opened treechat's export (tests/fixtures/pi): the checkpoints are in its tree and
    out of its context; imported here, the context is Pi's and the file history is whole."""
    from tests.fixtures import PI_FIXTURES
    from treechat.session.context import build_context
    from treechat.storage.session_file import read_session_file

    pi = json.loads((PI_FIXTURES / "treechat-checkpoints.expected.json").read_text())
    header, entries, leaf, _ = read_session_file(PI_FIXTURES / "treechat-checkpoints.jsonl")
    storage, _ = await catalog.import_session(header, entries, leaf)
    assert await storage.get_leaf_id() == pi["leafId"]
    path = await storage.get_path_to_root(pi["leafId"])
    ours = build_context(path, await storage.get_path_state(pi["leafId"]))
    assert [m.model_dump(mode="json", by_alias=True, exclude_unset=True) for m in ours.messages] == \
        pi["context"]["messages"]
    assert sorted((r.id, r.parent_id, r.type) for r in await storage.get_tree_rows()) == \
        sorted((n["id"], n["parentId"], n["type"]) for n in pi["tree"])
    history = await FileHistory.load(storage)
    [notes] = history.paths
    assert notes.endswith("notes.txt") and len(history.changes_of(notes)) == 2
    final = history.state_at(await path_ids_of(storage, pi["leafId"]))[notes]
    assert of(bytes, history.blob(of(str, final))).startswith(b"alpha\ngamma\n")
