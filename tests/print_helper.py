"""Print mode for tests that hold a Session: the controller on that session's storage."""

from __future__ import annotations

import io
from collections.abc import Sequence

from treechat.agent.tools import parse_tool_names
from treechat.chat import Chat
from treechat.cli.print_mode import run_print
from treechat.config.settings import Settings
from treechat.llm.registry import ModelRegistry
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog


async def print_run(prompt: str, session: Session, *, model_ref: str, registry: ModelRegistry, settings: Settings,
                    cwd: str | None = None, tools: str | Sequence[str] | None = None, yes: bool = False,
                    attach: Sequence[str] = (), system: str | None = None) -> tuple[int, str, str, Session]:
    """(exit status, stdout, stderr, the session as it is afterwards)."""

    async def allow(command: str) -> bool:
        return True

    out, err = io.StringIO(), io.StringIO()
    names = parse_tool_names(tools) if tools is not None else None
    chat = Chat(catalog=MemoryCatalog(), settings=settings, registry=registry, model_ref=model_ref, tools=names,
                cwd=cwd, confirm=allow if yes else None, system=system)
    await chat.open(session.storage)
    code = await run_print(chat, prompt, out=out, err=err, attach=attach)
    chat.local.close()  # (questions to a local server still under way end with the run, as in `-p`)
    return code, out.getvalue(), err.getvalue(), await Session.open(session.storage)

