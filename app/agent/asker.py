"""Who asks the person when a tool asks (bash's command, an edit, a read outside the folder, an MCP
call): the agent they talk to, or a sub-agent it started (the `task` tool).

The front end's questions (`Chat.confirm`, `confirm_read`, `approve_change`, `confirm_tool`) keep
their signatures: the sub-agent's run sets `ASKER` around itself, and asyncio copies the context
into every task started inside it (its requests, its tools, the tools' questions), so a front end
reads `current_asker()` where it builds the question and names who asks. None: the main agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Asker:
    """A sub-agent: the `task` call's description and the session that keeps its transcript."""

    description: str
    session_id: str
    kind: Literal["task"] = "task"

    @property
    def title(self) -> str:
        """`task 'fix tests'`: what a question's title starts with ("… asks: Run this command?")."""
        words = " ".join(self.description.split())
        return f"{self.kind} '{words[:57] + '…' if len(words) > 58 else words}'"


ASKER: ContextVar[Asker | None] = ContextVar("treechat_asker", default=None)


def current_asker() -> Asker | None:
    """Who asks now (read where the question is built, in the asking task): None for the main agent."""
    return ASKER.get()


@contextmanager
def asking_as(asker: Asker) -> Iterator[None]:
    """Everything run inside (and every task started from it) asks as `asker`."""
    token = ASKER.set(asker)
    try:
        yield
    finally:
        ASKER.reset(token)


__all__ = ["ASKER", "Asker", "asking_as", "current_asker"]
