"""The tools with a host (an editor serving their files and running their commands, as under
`treechat acp`): what is at a path is still looked at here first, so a FIFO or a folder is never
asked of the host; the host's text is what read and edit see, edit writes through it, and bash's
command runs there; a host's failure is one sentence for the model."""

from __future__ import annotations

import os
from typing import Any

import pytest

from treechat.agent.tools import CommandRun, HostError, make_tools
from treechat.agent.tools.changes import ProposedChange
from treechat.llm.abort import AbortSignal


class Buffers:
    """A `FileHost` serving texts from memory (an editor's open buffers)."""

    def __init__(self, texts: dict[str, str], *, refuse: str | None = None) -> None:
        self.texts, self.refuse = texts, refuse
        self.asked: list[str] = []
        self.written: list[tuple[str, str]] = []

    async def read_text(self, path: str) -> str:
        self.asked.append(path)
        if self.refuse:
            raise HostError(self.refuse)
        return self.texts[path]

    async def write_text(self, path: str, text: str) -> None:
        self.written.append((path, text))
        self.texts[path] = text


class Terminal:
    """A `CommandHost` that answers with a given run."""

    def __init__(self, ran: CommandRun | None = None) -> None:
        self.ran = ran
        self.commands: list[tuple[str, str, str, float]] = []

    async def run(self, tool_call_id: str, command: str, cwd: str, limit: float, keep: int,
                  signal: AbortSignal | None) -> CommandRun:
        self.commands.append((tool_call_id, command, cwd, limit))
        if self.ran is None:
            raise HostError("the editor refused making a terminal")
        return self.ran


async def yes(_: Any) -> bool:
    return True


async def approve(_: ProposedChange) -> bool:
    return True


async def call(tool: Any, **args: Any) -> Any:
    async def on_update(_: Any) -> None:
        pass

    return await tool.execute("call-1", tool.validate(tool.prepare_arguments(args)), AbortSignal(), on_update)


@pytest.fixture
def folder(tmp_path):
    work = tmp_path.resolve() / "work"  # (real: the tools ask the host by real path)
    (work / ".git").mkdir(parents=True)
    return work


async def test_read_and_edit_see_the_hosts_text_and_edit_writes_through_it(folder):
    (folder / "a.txt").write_text("on disk\n")
    real = str(folder / "a.txt")
    host = Buffers({real: "in the buffer\n"})
    read, edit = make_tools(["read", "edit"], cwd=folder, approve=approve, files=host)
    assert (await call(read, path="a.txt")).content[0].text == "in the buffer\n"
    done = await call(edit, path="a.txt", edits=[{"oldText": "buffer", "newText": "editor"}])
    assert not done.is_error
    assert host.written == [(real, "in the editor\n")] and (folder / "a.txt").read_text() == "on disk\n"


async def test_what_is_no_regular_file_is_never_asked_of_the_host(folder):
    os.mkfifo(folder / "pipe")
    (folder / "dir").mkdir()
    host = Buffers({})
    [read] = make_tools(["read"], cwd=folder, files=host)
    assert "is a FIFO; not read" in (await call(read, path="pipe")).content[0].text
    assert "is a directory" in (await call(read, path="dir")).content[0].text
    assert "No such file" in (await call(read, path="missing.txt")).content[0].text
    assert host.asked == []


async def test_a_hosts_refusal_is_one_sentence_for_the_model(folder):
    (folder / "a.txt").write_text("x\n")
    host = Buffers({}, refuse="the editor refused reading a.txt: no such buffer")
    read, edit = make_tools(["read", "edit"], cwd=folder, approve=approve, files=host)
    got = await call(read, path="a.txt")
    assert got.is_error and got.content[0].text == "Cannot read a.txt: the editor refused reading a.txt: no such buffer"
    got = await call(edit, path="a.txt", edits=[{"oldText": "x", "newText": "y"}])
    assert got.is_error and "Could not read a.txt: the editor refused" in got.content[0].text


async def test_bash_runs_on_the_command_host_and_reads_the_same(folder):
    host = Terminal(CommandRun("line one\nline two\n", 2))
    [bash] = make_tools(["bash"], cwd=folder, confirm=yes, commands=host)
    got = await call(bash, command="make test", timeout=5)
    assert host.commands == [("call-1", "make test", str(folder), 5.0)]
    assert got.is_error and got.content[0].text == "line one\nline two\n\nCommand exited with code 2"
    host.ran = CommandRun("", None, signal="SIGKILL")
    assert (await call(bash, command="x")).content[0].text == "Command ended by signal SIGKILL"
    host.ran = None
    got = await call(bash, command="x")
    assert got.is_error and got.content[0].text == "The command could not be started: the editor refused making a terminal"
