"""Which tools the next request carries (issue 37): config.toml's `tools` (or `--tools`), what
`/tools` turned on or off while the session is open, and what the path records.

- Every built-in tool is made for the whole run, so `/tools bash on` works whatever config.toml
  says. The default set is config.toml's `tools` (all seven unless it names fewer) or `--tools`.
- `/tools NAME on|off` holds while the session is open, on every branch: a tool turned on is on
  whatever the path recorded; one turned off is off, an MCP server's tool too.
- The path records the set each request carried (`active_tools_change`: the session writes it
  just before a request that carries another set, and `/tools` when nothing runs). Reopened, a
  session starts from the default set narrowed by its leaf's record: what was turned off stays
  off; a tool the default leaves out (`tools = []`) needs `/tools NAME on` again, so config.toml
  has the last word on what a session starts with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from treechat.agent.tools import BUILTIN_TOOLS
from treechat.session.agent_session import OnPath, offered_on_path

T = TypeVar("T", bound=OnPath)

# What a person reads about each built-in tool in `/tools` (the model reads the tool's own description).
# (`/tools` says once that bash, edit and write ask first, and the others outside the working folder.)
BUILTIN_WORDS = {
    "read": "read a file",
    "ls": "list a folder",
    "grep": "search files for a pattern",
    "bash": "run a shell command",
    "edit": "change a file (shown as a diff)",
    "write": "create or replace a file",
    "task": "hand a task to a sub-agent (its own context, these tools)",
}


@dataclass(frozen=True)
class ToolState:
    """One row of `/tools`: a tool, whether the next request carries it, where it comes from."""

    name: str
    on: bool
    builtin: bool  # False: an MCP server's (`NAME__TOOL`)
    description: str


@dataclass(frozen=True)
class Named:
    """A tool by its name only (the status needs no tool object)."""

    name: str
    kept_on_every_path: bool = False


class ToolChoice:
    """The default set and what `/tools` changed in the open session (cleared when another opens)."""

    def __init__(self, default: Iterable[str]) -> None:
        self.default = tuple(default)
        self.on: set[str] = set()
        self.off: set[str] = set()

    def reset(self) -> None:
        self.on.clear()
        self.off.clear()

    def turn(self, name: str, on: bool) -> None:
        (self.on if on else self.off).add(name)
        (self.off if on else self.on).discard(name)

    def allowed(self, tools: Sequence[T]) -> list[T]:
        """The tools that may be on: the built-ins the default or `/tools` turned on and every MCP
        tool, less what `/tools` turned off (the path's record narrows these: `offered`)."""
        return [t for t in tools if t.name not in self.off
                and (t.kept_on_every_path or t.name in self.default or t.name in self.on)]

    def offered(self, tools: Sequence[T], recorded: list[str] | None) -> list[T]:
        """The tools a request on a path recording `recorded` carries."""
        return offered_on_path(self.allowed(tools), recorded, frozenset(self.on))


def builtin_named() -> list[Named]:
    return [Named(n) for n in BUILTIN_TOOLS]


__all__ = ["BUILTIN_WORDS", "Named", "ToolChoice", "ToolState", "builtin_named"]
