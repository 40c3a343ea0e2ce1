"""Every MCP server of a chat: started in the background, their tools offered, their state listed.

`McpManager` is made at start without touching the SDK; `start()` (the app: after the first
frame; print mode and `treechat mcp`: before the prompt) loads the SDK on a thread, then starts
each enabled server in its own task. What changes (a server ready, failed, stopped and restarted,
its tools listed again) is reported to `on_change` as one line, or None when only the tools
changed; `tools()` is the current set, `rows()` what `/mcp` and `treechat mcp` show.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from treechat.storage.json_types import JsonObject

from .config import ServerSpec

if TYPE_CHECKING:
    from .server import McpServer
    from .tools import ConfirmCall, McpTool

RowState = Literal["starting", "ready", "failed", "stopped", "disabled", "not trusted"]


@dataclass(frozen=True)
class ServerRow:
    """One server as `/mcp` and `treechat mcp` show it."""

    name: str
    state: RowState
    origin: str
    where: str
    tools: tuple[str, ...] = ()
    error: str | None = None
    trusted: bool = False
    restarted: int = 0
    bounded: str | None = None  # what the bounds on its tools left out (None: nothing)

    def to_json(self) -> JsonObject:
        return {"name": self.name, "state": self.state, "origin": self.origin, "where": self.where,
                "tools": list(self.tools), "error": self.error, "trusted": self.trusted, "restarted": self.restarted,
                "bounded": self.bounded}


class McpManager:
    def __init__(self, specs: list[ServerSpec], *, cwd: str, env: dict[str, str] | None = None,
                 on_change: Callable[[str | None], None] = lambda line: None,
                 confirm: Callable[[], ConfirmCall | None] = lambda: None, max_message: int | None = None) -> None:
        self.specs = list(specs)
        self.max_message = max_message  # bytes of one answer (None: the server module's MAX_MESSAGE)
        self.cwd, self.env = cwd, env
        self.on_change = on_change
        self.confirm = confirm  # asked at each call: the front end sets it after the manager is made
        self.servers: dict[str, McpServer] = {}
        self.untrusted: list[ServerSpec] = []  # a project's servers not (yet) allowed
        self.untrusted_note = "this project's .mcp.json is not trusted yet (/mcp trust asks)"
        self.problems: list[str] = []  # lines about servers that cannot be used at all
        self._tools: dict[str, list[McpTool]] = {}
        self._bounded: dict[str, str] = {}  # a server's tools over their bounds: what was left out
        self._all_left_out: list[str] = []  # tools left out by the bound on every server's together
        self._start: asyncio.Task[None] | None = None
        self._started = False  # start() was called: servers added later start at once

    @property
    def configured(self) -> bool:
        return bool(self.specs or self.untrusted or self.problems)

    def add(self, specs: list[ServerSpec]) -> None:
        """More servers (a project's, once trusted); started now if the others were."""
        taken = {s.name for s in self.specs}
        for spec in specs:
            if spec.name in taken:
                self.problems.append(f"{spec.origin}: server {spec.name!r} is not used: config.toml has one "
                                     "of that name.")
                continue
            self.specs.append(spec)
            self.untrusted = [s for s in self.untrusted if s.name != spec.name]
            if self._started:
                self._start = asyncio.get_running_loop().create_task(self._launch([spec]))

    # ------------------------------------------------------------ life

    def start(self) -> None:
        """Start every enabled server in the background (once)."""
        if not self._started and any(s.config.enabled for s in self.specs):
            self._start = asyncio.get_running_loop().create_task(self._launch(list(self.specs)))
        self._started = True

    async def _launch(self, specs: list[ServerSpec]) -> None:
        # The SDK logs what it sees to Python's last-resort handler, which writes to the terminal
        # (over the app's screen): its problems reach the person as our one line instead.
        for name in ("mcp", "httpx2", "httpcore2"):
            logging.getLogger(name).addHandler(logging.NullHandler())
            logging.getLogger(name).propagate = False
        # the SDK is about a second of imports: on a thread, so the screen keeps drawing meanwhile
        module = await asyncio.to_thread(importlib.import_module, "treechat.mcp.server")
        for spec in specs:
            if spec.config.enabled and spec.name not in self.servers:
                server = module.McpServer(spec, cwd=self.cwd, env=self.env, on_change=self._changed,
                                          max_message=self.max_message or module.MAX_MESSAGE)
                self.servers[spec.name] = server
                server.start()

    async def wait_started(self, limit: float | None = None) -> list[str]:
        """Until every enabled server is ready or has failed (all at once, each within its startup
        timeout), or `limit` seconds in all; returns the servers still starting then."""

        async def all_settled() -> None:
            if self._start is not None:
                await asyncio.gather(self._start, return_exceptions=True)
            waits = [s.settled(s.spec.startup_timeout + 5) for s in self.servers.values()]
            if waits:
                await asyncio.gather(*waits)

        waiting = asyncio.ensure_future(all_settled())
        done, _ = await asyncio.wait({waiting}, timeout=limit)
        if not done:
            waiting.cancel()
        return self.starting

    @property
    def starting(self) -> list[str]:
        """Servers that will have tools soon: started and not yet ready."""
        pending = self._start is not None and not self._start.done()
        return [s.name for s in self.specs if s.config.enabled and (
            (s.name not in self.servers and pending) or
            (s.name in self.servers and self.servers[s.name].state == "starting"))]

    async def restart(self, name: str) -> bool:
        server = self.servers.get(name)
        if server is None:
            return False
        await server.restart()
        await server.settled(server.spec.startup_timeout + 5)
        return True

    async def close(self) -> None:
        if self._start is not None and not self._start.done():
            self._start.cancel()
            await asyncio.gather(self._start, return_exceptions=True)
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)

    # ------------------------------------------------------------ what there is

    def tools(self) -> list[McpTool]:
        """The tools of every ready server, in the order the servers were declared, within the
        bound on all of them together (tools.MAX_ALL_TOOLS, MAX_ALL_BYTES; the rest: `all_left_out`)."""
        from .tools import MAX_ALL_BYTES, MAX_ALL_TOOLS

        kept: list[McpTool] = []
        left_out: list[str] = []
        budget = MAX_ALL_BYTES
        for spec in self.specs:
            for tool in self._tools.get(spec.name, []):
                size = tool.size
                if len(kept) >= MAX_ALL_TOOLS or size > budget:
                    left_out.append(tool.name)
                    continue
                kept.append(tool)
                budget -= size
        self._all_left_out = left_out
        return kept

    def all_bound_note(self) -> str | None:
        """The line that says the bound on every server's tools together was hit (as of the last
        `tools()`; None: it was not)."""
        from .tools import MAX_ALL_BYTES, MAX_ALL_TOOLS

        n = len(self._all_left_out)
        if not n:
            return None
        names = ", ".join(self._all_left_out[:5]) + (", …" if n > 5 else "")
        return (f"{n} MCP tool{'s are' if n != 1 else ' is'} not offered to the model ({names}): every server's "
                f"tools together are bounded ({MAX_ALL_TOOLS} tools, {MAX_ALL_BYTES // 1000} KB).")

    def listing_problems(self) -> list[str]:
        """What `/mcp` and `treechat mcp` add under the servers: servers that cannot be used, and the bound."""
        self.tools()
        note = self.all_bound_note()
        return [*self.problems, *([note] if note else [])]

    def _changed(self, server: McpServer, what: str) -> None:
        from .tools import McpTool, exposed_name, offered

        bound_line = None
        if server.state == "ready":
            taken = {t.name for name, tools in self._tools.items() if name != server.name for t in tools}
            made: dict[str, McpTool] = {}
            kept = offered(server.tools, more=server.tools_unread)
            for info in kept.tools:
                exposed = exposed_name(server.name, info.name)
                if exposed not in taken and exposed not in made:  # (two names the same once cleaned up)
                    made[exposed] = McpTool(server, info, confirm=self.confirm)
            self._tools[server.name] = list(made.values())
            note = kept.note()
            if note is not None and self._bounded.get(server.name) != note:  # said once, not at every listing
                bound_line = f"MCP server {server.name!r}: {note}."
            if note is None:
                self._bounded.pop(server.name, None)
            else:
                self._bounded[server.name] = note
        else:
            self._tools.pop(server.name, None)
        self.on_change(_line(server, what) or bound_line)

    def rows(self) -> list[ServerRow]:
        rows = []
        for spec in self.specs:
            server = self.servers.get(spec.name)
            if not spec.config.enabled:
                state: RowState = "disabled"
            elif server is None:
                state = "starting" if self._start is not None else "stopped"
            else:
                state = server.state
            tools = tuple(t.name for t in self._tools.get(spec.name, []))
            rows.append(ServerRow(spec.name, state, spec.origin, spec.where, tools, server.error if server else None,
                                  spec.trusted, server.restarted if server else 0,
                                  self._bounded.get(spec.name) if state == "ready" else None))
        rows += [ServerRow(s.name, "not trusted", s.origin, s.where, error=self.untrusted_note) for s in self.untrusted]
        return rows


def _line(server: McpServer, what: str) -> str | None:
    """The one line a change is worth (None: nothing a person needs to hear)."""
    name, error = server.name, server.error or "no reason given"
    if what == "failed":
        return f"MCP server {name!r} could not start: {error}."
    if what == "restarting":
        return f"MCP server {name!r} stopped ({error}); restarting it."
    if what == "ready" and server.restarted:
        return f"MCP server {name!r} is running again."
    if what in ("lost again", "restart failed"):
        return f"MCP server {name!r} stopped again ({error}); its tools are off (/mcp restart {name} tries again)."
    return None


def format_rows(rows: list[ServerRow], problems: Sequence[str] = ()) -> str:
    """The listing `/mcp` and `treechat mcp` print: a line per server, its tools, its last error."""
    if not rows and not problems:
        return ("No MCP servers: add [mcp_servers.NAME] tables to config.toml (command = … or url = …), "
                "or a .mcp.json to the project.")
    lines = []
    width = max((len(r.name) for r in rows), default=0)
    for r in rows:
        mark = {"ready": "✓", "failed": "✗", "starting": "…", "not trusted": "?"}.get(r.state, "·")
        trusted = ", trusted" if r.trusted else ""
        lines.append(f"{mark} {r.name:<{width}}  {r.state}  {r.where}  ({r.origin}{trusted})")
        if r.bounded:  # (before the tools: a hundred names would hide it)
            lines.append(f"    bounded: {r.bounded}")
        if r.tools:
            lines.append(f"    {len(r.tools)} tool{'s' if len(r.tools) != 1 else ''}: {', '.join(r.tools)}")
        if r.error:
            lines.append(f"    {'not started: ' if r.state == 'not trusted' else 'last error: '}{r.error}")
        if r.restarted:
            lines.append(f"    restarted {r.restarted} time{'s' if r.restarted != 1 else ''}")
    lines += [f"! {p}" for p in problems]
    return "\n".join(lines)
