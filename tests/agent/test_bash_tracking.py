"""bash watches the files edit and write touched: what a command changes in them is a checkpoint too,
so restoring to before the command brings the file back (a command's own new files are not tracked)."""

from __future__ import annotations

from treechat.agent.tools import make_tools
from treechat.llm.abort import AbortSignal
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import UserMessage
from treechat.workspace.blobs import digest
from treechat.workspace.history import FileHistory, path_ids_of
from treechat.workspace.recorder import SessionRecorder


async def yes(_) -> bool:
    return True


async def no(_) -> bool:
    return False


async def run(tool, call_id: str, **args):
    async def on_update(_):
        pass

    return await tool.execute(call_id, tool.validate(tool.prepare_arguments(args)), AbortSignal(), on_update)


async def setup(tmp_path, confirm=yes):
    (tmp_path / ".git").mkdir(parents=True)
    session = await Session.open(await MemoryCatalog().create(cwd=str(tmp_path)))
    await session.append_message(UserMessage(content="go"))
    history = FileHistory()
    bash, write = make_tools(["bash", "write"], cwd=tmp_path, confirm=confirm, approve=yes,
                             recorder=SessionRecorder(session, history))
    await run(write, "c1", path="notes.txt", content="alpha\n")
    return session, history, bash


async def test_a_command_that_changes_a_tracked_file_is_recorded(tmp_path) -> None:
    session, history, bash = await setup(tmp_path)
    before_command = session.leaf_id
    assert not (await run(bash, "c2", command="echo beta >> notes.txt; echo untracked > other.txt")).is_error
    path = str(tmp_path / "notes.txt")
    [_, (cp, change)] = history.changes_of(path)
    assert cp.tool == "bash" and cp.tool_call_id == "c2"
    assert (change.before, change.after) == (digest(b"alpha\n"), digest(b"alpha\nbeta\n"))
    assert history.paths == [path]  # the command's new file is not tracked
    stored = await FileHistory.load(session.storage)  # on the tree, like edit's
    assert stored.state_at(await path_ids_of(session.storage, session.leaf_id)) == {path: digest(b"alpha\nbeta\n")}
    assert stored.state_at(await path_ids_of(session.storage, before_command)) == {path: digest(b"alpha\n")}


async def test_a_command_that_changes_nothing_or_is_refused_records_nothing(tmp_path) -> None:
    session, history, bash = await setup(tmp_path)
    await run(bash, "c2", command="cat notes.txt")
    assert len(history.checkpoints) == 1
    session, history, bash = await setup(tmp_path / "b", confirm=no)
    (tmp_path / "b" / "notes.txt").write_text("changed meanwhile by someone\n")
    assert (await run(bash, "c2", command="true")).is_error  # refused: nothing ran, nothing looked at
    assert len(history.checkpoints) == 1
