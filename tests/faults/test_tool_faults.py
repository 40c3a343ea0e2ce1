"""Tools that cannot hang (issue 15, item 6): special files are never opened, every tool stops
within about a second of Ctrl+C / Esc, and every tool has a time limit."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.narrow import first_text
from treechat.agent import Agent, AgentState
from treechat.agent.tools import FunctionTool, Reach, make_tools
from treechat.agent.tools import files as file_tools
from treechat.llm.abort import AbortSignal

from ..agent.scripted import Recorder, ScriptedStream, reply


def text(result) -> str:
    return result.content[0].text


async def noop(_) -> None:
    pass


class FifoWatchdog:
    """If the test is still running after `after` s, open the FIFO for writing and close it: a
    reader blocked on it gets EOF, so a regression fails this test instead of hanging the suite."""

    def __init__(self, fifo, after: float = 5.0) -> None:
        self.fifo, self.after, self.fired = str(fifo), after, False
        self._done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        if self._done.wait(self.after):
            return
        self.fired = True
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass

    def stop(self) -> None:
        self._done.set()


@pytest.fixture
def tree_with_fifo(tmp_path):
    (tmp_path / "a.txt").write_text("needle one\n")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("hay\nneedle two\n")
    os.symlink("/dev/null", tmp_path / "sub" / "null")
    watchdog = FifoWatchdog(tmp_path / "pipe")
    yield tmp_path
    watchdog.stop()
    assert not watchdog.fired, "a tool blocked on the FIFO"


async def call(tool, signal=None, **args):
    return await tool.execute("id", tool.validate(args), signal or AbortSignal(), noop)


async def test_grep_skips_a_fifo_and_devices(tree_with_fifo) -> None:
    (grep,) = make_tools(["grep"], cwd=tree_with_fifo, reach=Reach.for_run(tree_with_fifo, None, anywhere=True))
    result = await call(grep, pattern="needle")
    assert text(result) == "a.txt:1: needle one\nsub/b.txt:2: needle two"


async def test_read_and_grep_refuse_special_files_by_name(tree_with_fifo) -> None:
    # (reading anywhere allowed: /dev/null is outside the working folder)
    read, grep = make_tools(["read", "grep"], cwd=tree_with_fifo, reach=Reach.for_run(tree_with_fifo, None, anywhere=True))
    fifo = await call(read, path="pipe")
    assert fifo.is_error and text(fifo) == "pipe is a FIFO; not read."
    dev = await call(read, path="/dev/null")
    assert dev.is_error and text(dev) == "/dev/null is a character device; not read."
    searched = await call(grep, pattern="x", path="sub/null")
    assert searched.is_error and text(searched) == "sub/null is a character device; not searched."


async def test_ls_marks_special_files_without_opening_them(tree_with_fifo) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tree_with_fifo / "sock"))
    try:
        (ls,) = make_tools(["ls"], cwd=tree_with_fifo)
        assert text(await call(ls)) == "a.txt\npipe [FIFO]\nsock [socket]\nsub/"
        assert text(await call(ls, path="sub")) == "b.txt\nnull [character device]"
    finally:
        sock.close()


async def test_a_file_tool_stuck_in_a_read_stops_on_abort(tmp_path, monkeypatch) -> None:
    (tmp_path / "slow.txt").write_text("x\n")
    release = threading.Event()
    real_open = file_tools.open_regular  # type: ignore[attr-defined]  # the name files.py reads with, patched below

    def hung_open(path):  # a read that never returns, like a dead network mount
        release.wait(30)
        return real_open(path)

    monkeypatch.setattr(file_tools, "open_regular", hung_open)
    try:
        for name, args in (("read", {"path": "slow.txt"}),):  # grep: see the runaway pattern below
            (tool,) = make_tools([name], cwd=tmp_path)
            signal = AbortSignal()
            task = asyncio.create_task(call(tool, signal, **args))
            await asyncio.sleep(0.1)
            start = time.monotonic()
            signal.abort()
            with pytest.raises(Exception, match="cancelled"):
                await asyncio.wait_for(task, 5)
            assert time.monotonic() - start < 1.0, name
    finally:
        release.set()


# Exponential backtracking: every way of splitting the "a"s is tried before the "b" fails the match.
RUNAWAY = r"(a+)+$"


@pytest.fixture
def runaway_line(tmp_path):
    (tmp_path / "a.txt").write_text("before\n")
    (tmp_path / "b.txt").write_text("a" * 40 + "b\n")
    return tmp_path


@pytest.mark.slow  # the real App and a runaway child process
async def test_a_runaway_pattern_neither_freezes_the_app_nor_outlives_esc(runaway_line) -> None:
    """Python's re holds the GIL while it matches: on a thread this pattern would stop the event
    loop (every key, Esc included) for hours. The search runs in a process that Esc kills."""
    (grep,) = make_tools(["grep"], cwd=runaway_line)
    signal = AbortSignal()
    task = asyncio.create_task(call(grep, signal, pattern=RUNAWAY))
    ticks = 0
    for _ in range(20):  # the loop keeps turning while the search is stuck on b.txt
        await asyncio.sleep(0.025)
        ticks += 1
    assert not task.done() and ticks == 20
    start = time.monotonic()
    signal.abort()
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(task, 5)
    assert time.monotonic() - start < 1.0


@pytest.mark.slow  # runs to the time limit
async def test_a_runaway_pattern_stops_at_the_time_limit_with_what_it_found(runaway_line, monkeypatch) -> None:
    monkeypatch.setattr(file_tools, "WORK_SECONDS", 0.3)
    (grep,) = make_tools(["grep"], cwd=runaway_line)
    start = time.monotonic()
    result = await call(grep, pattern=r"before|(a+)+$")
    assert time.monotonic() - start < 3.0
    assert text(result) == "a.txt:1: before\n[Stopped after 0.3 s; narrow the path or pattern.]"


async def test_a_file_tool_gives_up_at_its_time_limit(tmp_path, monkeypatch) -> None:
    for i in range(50):
        (tmp_path / f"f{i}.txt").write_text("needle\n")
    monkeypatch.setattr(file_tools, "WORK_SECONDS", 0.0)
    (grep,) = make_tools(["grep"], cwd=tmp_path)
    result = await call(grep, pattern="needle")
    assert "[Stopped after 0 s; narrow the path or pattern.]" in text(result)


# ---------------------------------------------------------------- through the agent loop


class NoArgs(BaseModel):
    pass


async def fifo_written(path: Path) -> None:
    """Until something writes to the FIFO at `path` (Linux reports none readable before a
    first writer came): a wait on the event itself, not a sleep."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    loop, written = asyncio.get_running_loop(), asyncio.Event()
    loop.add_reader(fd, written.set)
    try:
        await asyncio.wait_for(written.wait(), 30)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def agent_with(tool) -> tuple[Agent, Recorder]:
    stream = ScriptedStream(reply("", calls=[("c1", tool.name, {})]), reply("after"))
    agent = Agent(state=AgentState(tools=[tool]), stream_fn=stream)
    rec = Recorder()
    agent.subscribe(rec)
    return agent, rec


@pytest.mark.parametrize("stubborn", [False, True])
@pytest.mark.slow  # every tool, stopped mid-work
async def test_any_tool_stops_within_a_second_of_abort(stubborn) -> None:
    async def forever(args, signal, on_update):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if not stubborn:
                raise
            await asyncio.sleep(3)  # a badly written tool: swallows cancellation and works on
        return "too late"

    tool = FunctionTool("wait", "waits", NoArgs, forever)
    agent, rec = agent_with(tool)
    run = asyncio.create_task(agent.prompt("go"))
    await rec.until(lambda: "tool_execution_start" in rec.types)
    start = time.monotonic()
    agent.abort()
    await asyncio.wait_for(run, 5)
    assert time.monotonic() - start < 1.5
    (end,) = rec.named("tool_execution_end")
    assert end.is_error and "stopped: the run was cancelled" in text(end.result)


@pytest.mark.slow  # runs to the time limit
async def test_a_tool_past_its_timeout_is_stopped() -> None:
    async def slow(args, signal, on_update):
        await asyncio.sleep(30)
        return "late"

    agent, rec = agent_with(FunctionTool("slow", "slow", NoArgs, slow, timeout=0.2))
    await asyncio.wait_for(agent.prompt("go"), 5)
    (end,) = rec.named("tool_execution_end")
    assert end.is_error and text(end.result) == "Tool slow timed out after 0.2 s and was stopped."
    assert first_text(agent.state.messages[-1]) == "after"  # the model saw the timeout and went on


async def test_bash_stops_on_abort_through_the_loop(tmp_path) -> None:
    async def yes(_):
        return True

    (bash,) = make_tools(["bash"], cwd=tmp_path, confirm=yes)
    os.mkfifo(tmp_path / "started.fifo")  # the command says it is under way through it
    command = "echo started; echo > started.fifo; sleep 30"
    stream = ScriptedStream(reply("", calls=[("c1", "bash", {"command": command})]))
    agent = Agent(state=AgentState(tools=[bash]), stream_fn=stream)
    rec = Recorder()
    agent.subscribe(rec)
    run = asyncio.create_task(agent.prompt("go"))
    await fifo_written(tmp_path / "started.fifo")  # "started" is in the pipe: now stop it
    start = time.monotonic()
    agent.abort()
    await asyncio.wait_for(run, 5)
    assert time.monotonic() - start < 1.0
    (end,) = rec.named("tool_execution_end")
    assert text(end.result) == "started\n\n(command cancelled)"


@pytest.mark.slow  # a background process outliving its command
async def test_bash_does_not_wait_for_a_background_process_holding_its_output(tmp_path) -> None:
    async def yes(_):
        return True

    (bash,) = make_tools(["bash"], cwd=tmp_path, confirm=yes)
    pidfile = tmp_path / "bg.pid"
    start = time.monotonic()
    try:
        result = await asyncio.wait_for(call(bash, command=f"sleep 20 & echo $! > {pidfile}; echo hi"), 10)
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass
    assert time.monotonic() - start < 5
    assert text(result).startswith("hi") and "background process still holds the output" in text(result)
    assert not result.is_error


async def test_bash_has_a_default_time_limit() -> None:
    from treechat.agent.tools.bash import DEFAULT_TIMEOUT, MAX_TIMEOUT, BashArgs

    assert BashArgs.model_validate({"command": "x"}).timeout is None and DEFAULT_TIMEOUT == 120 and MAX_TIMEOUT == 600


def test_grep_leaves_nothing_on_stderr(tmp_path) -> None:
    """The search process is reaped by asyncio alone: killing one that already exited made
    Popen poll it first, and asyncio then logged "Unknown child process pid N" (every other run)."""
    import subprocess
    import sys

    (tmp_path / "a.txt").write_text("needle\n")
    script = (
        "import asyncio\n"
        "from treechat.agent.tools import make_tools\n"
        "from treechat.llm.abort import AbortSignal\n"
        "async def main():\n"
        f"    (grep,) = make_tools(['grep'], cwd={str(tmp_path)!r})\n"
        "    for _ in range(8):\n"
        "        r = await grep.execute('i', grep.validate({'pattern': 'needle'}), AbortSignal(), None)\n"
        "        assert r.content[0].text == 'a.txt:1: needle', r\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
