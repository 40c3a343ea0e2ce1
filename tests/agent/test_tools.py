"""Built-in tools through the agent's tool interface."""

from __future__ import annotations

import pytest

from treechat.agent.tools import UnknownToolError, make_tools, parse_tool_names
from treechat.agent.tools.truncate import MAX_LINES
from treechat.llm.abort import AbortSignal


async def call(tool, **args):
    async def on_update(_):
        pass

    return await tool.execute("id", tool.validate(args), AbortSignal(), on_update)


def text(result) -> str:
    return result.content[0].text


def test_tools_are_chosen_by_name() -> None:
    assert parse_tool_names("read, ls") == ["read", "ls"]
    assert parse_tool_names(None) == []
    with pytest.raises(UnknownToolError, match="Unknown tool 'rm'; the built-in tools are read, ls, grep, bash"):
        parse_tool_names("read,rm")


async def test_read_ls_grep(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("x = 'beta'\n")
    read, ls, grep = make_tools(["read", "ls", "grep"], cwd=tmp_path)
    assert text(await call(read, path="a.txt")) == "alpha\nbeta\ngamma\n"
    paged = text(await call(read, path="a.txt", offset=2, limit=1))
    assert paged.startswith("beta\n") and "Use offset=3 to continue" in paged
    assert text(await call(ls)) == "a.txt\nsub/"
    assert text(await call(grep, pattern="beta")) == "a.txt:2: beta\nsub/b.py:1: x = 'beta'"
    missing = await call(read, path="nope.txt")
    assert missing.is_error and text(missing) == "No such file: nope.txt"
    assert (await call(grep, pattern="(")).is_error


async def test_long_read_is_truncated_with_a_note(tmp_path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(MAX_LINES + 50)))
    (read,) = make_tools(["read"], cwd=tmp_path)
    out = text(await call(read, path="big.txt"))
    assert f"[Showing lines 1-{MAX_LINES} of {MAX_LINES + 50}. Use offset={MAX_LINES + 1} to continue.]" in out


async def test_bash_confirmation_truncation_and_exit_codes(tmp_path) -> None:
    asked = []

    async def confirm(command):
        asked.append(command)
        return command != "rm -rf /"

    (bash,) = make_tools(["bash"], cwd=tmp_path, confirm=confirm)
    ok = await call(bash, command="echo hi; echo err >&2")
    assert text(ok) == "hi\nerr" and not ok.is_error
    declined = await call(bash, command="rm -rf /")
    assert declined.is_error and "declined" in text(declined)
    failed = await call(bash, command="exit 3")
    assert failed.is_error and text(failed).endswith("Command exited with code 3")
    long = await call(bash, command=f"seq 1 {MAX_LINES + 10}")
    assert text(long).startswith("[Output truncated: showing the last") and text(long).endswith(str(MAX_LINES + 10))
    assert asked[0] == "echo hi; echo err >&2"
    (no_confirm,) = make_tools(["bash"], cwd=tmp_path)
    refused = await call(no_confirm, command="echo hi")
    assert refused.is_error and "--yes" in text(refused)


async def test_bash_is_killed_on_abort_and_timeout(tmp_path) -> None:
    import asyncio

    async def yes(_):
        return True

    (bash,) = make_tools(["bash"], cwd=tmp_path, confirm=yes)
    signal = AbortSignal()

    async def noop(_):
        pass

    task = asyncio.create_task(bash.execute("id", bash.validate({"command": "echo started; sleep 30"}), signal, noop))
    await asyncio.sleep(0.05)
    signal.abort()
    result = await asyncio.wait_for(task, 10)
    assert result.is_error and text(result).endswith("(command cancelled)")
    timed = await call(bash, command="sleep 30", timeout=0.1)
    assert timed.is_error and "timed out" in text(timed)
