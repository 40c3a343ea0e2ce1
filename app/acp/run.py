"""`treechat acp`: serve the Agent Client Protocol on stdin/stdout until the client closes stdin.

stdout carries the protocol and nothing else (wire.py); what a person should know goes to
stderr, one line each (an editor shows it in its log). A configuration problem stops the start
with one line, as every command does; after that, nothing a client sends ends the process.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from treechat.text.sanitize import visible_line

if TYPE_CHECKING:
    import argparse

    from treechat.storage.base import SessionCatalog

OpenCatalog = Callable[["argparse.Namespace"], AbstractAsyncContextManager["SessionCatalog"]]


class _OneLine(logging.Formatter):
    """A record as one stderr line: its message, and the exception's own words (no traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            err = record.exc_info[1]
            text += f": {type(err).__name__}: {err}"
        return f"treechat acp: {visible_line(text, 2000)}"


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("treechat.acp").setLevel(logging.INFO)


async def run_acp(args: argparse.Namespace, open_catalog: OpenCatalog) -> int:
    from acp import run_agent

    from treechat.agent.tools import parse_tool_names
    from treechat.bootstrap import load_environment

    from .agent import Choices, TreechatAgent
    from .wire import ProtocolOut, open_stdio

    out = ProtocolOut.claim()  # from here a stray print goes to stderr
    _log_to_stderr()
    env = load_environment(args.home)
    tools = parse_tool_names(args.tools) if args.tools is not None else None
    async with open_catalog(args) as catalog:
        agent = TreechatAgent(catalog, env, Choices(model=args.model, tools=tools, system=args.system))
        transport = await open_stdio(out)
        try:
            await run_agent(agent, transport)
        finally:
            await agent.close()
            await transport.close()
    return 0


__all__ = ["run_acp"]
