"""Shared by the MCP tests: servers to run, and the manager around them."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tests.fake_provider import FakeProvider
from treechat.mcp.config import McpServerConfig, ServerSpec
from treechat.mcp.manager import McpManager

FAKE = str(Path(__file__).with_name("fake_server.py"))


def time_server() -> str:
    """The real mcp-server-time from PyPI (the `test` extra), next to this interpreter."""
    found = Path(sys.executable).with_name("mcp-server-time")
    return str(found) if found.exists() else (shutil.which("mcp-server-time") or "mcp-server-time")


def fake(name: str = "fake", *args: str, trust: bool = True, timeout: float = 5.0, startup: float = 10.0,
         **options: Any) -> ServerSpec:
    config = McpServerConfig(command=sys.executable, args=[FAKE, *args], trust=trust, **options)
    return ServerSpec(name, config, "config.toml", timeout, startup)


def spec(name: str, trust: bool = True, timeout: float = 10.0, startup: float = 30.0, **options: Any) -> ServerSpec:
    return ServerSpec(name, McpServerConfig(trust=trust, **options), "config.toml", timeout, startup)


async def started(*specs: ServerSpec, cwd: str = ".", **kw: Any) -> tuple[McpManager, list[str]]:
    lines: list[str] = []
    manager = McpManager(list(specs), cwd=cwd, on_change=lambda line: lines.append(line) if line else None, **kw)
    manager.start()
    await manager.wait_started()
    return manager, lines


def tool(manager: McpManager, name: str) -> Any:
    return next(t for t in manager.tools() if t.name == name)


async def call(manager: McpManager, name: str, args: dict[str, Any] | None = None, signal: Any = None) -> Any:
    found = tool(manager, name)
    return await found.execute("call-1", found.validate(args or {}), signal, None)


KEY = "sk-test-mcp"  # the fake provider's key in `treechat`


async def treechat(home: Path, *argv: str, fp: FakeProvider | None = None, cwd: Path | None = None,
                   env: dict[str, str] | None = None, process: bool = False) -> tuple[int, str, str]:
    """`treechat --home HOME ARGV` in `cwd` (default: the home): in this process, on a thread
    (cli.main as the console script calls it; the MCP servers are real child processes all the
    same), or with `process` as a real `python -m treechat` (one test keeps the whole way)."""
    environ = dict(env or {})
    if fp is not None:
        environ.update(OPENAI_BASE_URL=fp.base_url, OPENAI_API_KEY=KEY)
    if not process:
        return await asyncio.to_thread(_in_process, ["--home", str(home), *argv], cwd or home, environ)
    environ = {**os.environ, **environ}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "treechat", "--home", str(home), *argv, cwd=str(cwd or home), env=environ,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


def _in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    from treechat.cli.main import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with open(os.devnull) as nothing, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            saved_stdin, sys.stdin = sys.stdin, nothing  # what the child had: stdin from /dev/null
            try:
                code = main(argv)
            finally:
                sys.stdin = saved_stdin
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()
