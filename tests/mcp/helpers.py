"""Shared by the MCP tests: servers to run, and the manager around them."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

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
