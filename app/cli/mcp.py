"""`treechat mcp` (each MCP server: its state, its tools, its last error) and MCP in `-p`.

`-p` starts the servers before its prompt and waits for them (each within its startup timeout),
so their tools are in the first request. A project's `.mcp.json` servers start only when they
were trusted in the app (for the file as it is now) or with `--project-mcp`; otherwise one
stderr line says they were left out. Calls to servers not marked `trust = true` run only with
`--yes`, as bash does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from ..agent.tools.base import AnyTool
    from ..chat import Chat
    from ..mcp.config import ProjectServers
    from .parser import Subcommands


def add_mcp_arguments(p: argparse.ArgumentParser, sub: Subcommands,
                      common: Callable[[argparse.ArgumentParser], None]) -> None:
    p.add_argument("--project-mcp", action="store_true", help="start the project's .mcp.json servers (print mode, mcp)")
    s = sub.add_parser("mcp", help="start each MCP server and list it: state, tools, last error")
    common(s)
    s.add_argument("--json", action="store_true", help="the list as JSON")
    s.add_argument("--project-mcp", action="store_true", default=argparse_suppress(),
                   help="start the project's .mcp.json servers too")


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


async def _allow_call(server: str, tool: str, arguments: str) -> bool:
    return True  # --yes: MCP calls run without asking


def start_for_print(chat: Chat, args: argparse.Namespace, err: TextIO) -> None:
    from treechat.text.sanitize import visible_line

    chat.confirm_tool = _allow_call if args.yes else None
    found, trust = chat.project_mcp()
    for problem in found.problems if found is not None else []:  # (a .mcp.json that cannot be read, a server in it)
        err.write(f"treechat: {visible_line(problem)}\n")
    say_project_servers((found, trust), chat.describe_project_mcp, args.project_mcp, err)
    chat.start_mcp(project=True if args.project_mcp else None)


def say_project_servers(project: tuple[ProjectServers | None, str], describe: Callable[[], str], started: bool, err: TextIO) -> None:
    """On stderr: a project's servers that are left out, or started by --project-mcp without
    being trusted, each whole (what the app's question shows: commands, arguments, the
    variables they read from your environment, the repository's scripts they run)."""
    from treechat.text.sanitize import visible, visible_line

    found, trust = project
    if found is None or trust not in ("ask", "refused"):
        return
    names = ", ".join(s.name for s in found.servers)
    if started:
        err.write(f"treechat: starting the MCP servers of {visible_line(str(found.path))} ({visible_line(names)}), "
                  "not trusted in the app, because of --project-mcp:\n")
    else:
        why = "were refused in the app" if trust == "refused" else "are not trusted yet"
        err.write(f"treechat: {visible_line(str(found.path))} lists MCP servers ({visible_line(names)}) that {why}; "
                  "they are not started (trust them in the app, or pass --project-mcp):\n")
    err.write("".join(f"    {line}\n" for line in visible(describe()).splitlines()))


async def run_mcp(args: argparse.Namespace) -> int:
    """List the servers after starting them; exit 1 when an enabled one could not start."""
    import json
    import os

    from ..bootstrap import load_environment
    from ..chat.events import Change, ChatEvent
    from ..chat.extras import Extras
    from ..config.settings import Settings
    from ..prompts.outside import ReadsOutside
    from ..text.sanitize import json_for_terminal, visible

    class Alone:
        """What the controller's MCP part reads, without a chat: `treechat mcp` needs no session or model."""

        def __init__(self, settings: Settings, cwd: str) -> None:
            self.settings, self.cwd, self.prompt_builder, self.agent = settings, cwd, None, None
            self.tool_names: list[str] = []
            self.outside, self.confirm_read = ReadsOutside.for_cwd(cwd), None  # (nothing is sent: nothing to ask)

        def offer_mcp_tools(self, mcp_tools: Sequence[AnyTool]) -> None:
            pass  # no agent to offer them to

        def emit(self, event: ChatEvent | Change) -> None:
            pass  # the listing says it all

    servers = Extras(Alone(load_environment(args.home).settings, os.getcwd()))
    say_project_servers(servers.project_mcp(), servers.describe_project_mcp, bool(args.project_mcp), sys.stderr)
    servers.start_mcp(project=True if args.project_mcp else None)
    try:
        await servers.mcp.wait_started()
        rows = servers.mcp.rows()
        if args.json:
            text = json.dumps({"servers": [r.to_json() for r in rows], "problems": servers.mcp.listing_problems()},
                              ensure_ascii=False, indent=2)
            sys.stdout.write((text if args.raw else json_for_terminal(text)) + "\n")
        else:
            text = servers.mcp_text()
            sys.stdout.write((text if args.raw else visible(text)) + "\n")
    finally:
        await servers.mcp.close()
    return 1 if any(r.state == "failed" for r in rows) else 0
