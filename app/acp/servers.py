"""The MCP servers an editor passes with session/new and session/load, as treechat runs them.

They join the session's MCP manager (app/mcp/) like config.toml's `[mcp_servers.NAME]`, with
the origin "the editor": a stdio server (command, args, env) or an HTTP one (url, headers); the
old SSE transport is not spoken (the agent says `mcpCapabilities.sse: false`, so an editor should
not send one) and an ACP-transport server is not either. A name is kept to the letters MCP tool
names allow; a name config.toml already uses stays config.toml's. Their calls are asked about
through the editor (they are not marked trusted), like any server's not marked `trust = true`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import ValidationError

from treechat.mcp.config import DEFAULT_STARTUP_TIMEOUT, McpServerConfig, ServerSpec

log = logging.getLogger("treechat.acp")
ORIGIN = "the editor"

Given = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio  # (the package's order: its Protocol's type)


def server_specs(given: Sequence[Given] | None, timeout: float) -> list[ServerSpec]:
    specs: list[ServerSpec] = []
    for server in given or ():
        name = re.sub(r"[^A-Za-z0-9_-]", "_", server.name).strip("_-") or "server"
        try:
            if isinstance(server, McpServerStdio):
                config = McpServerConfig(command=server.command, args=list(server.args),
                                         env={v.name: v.value for v in server.env})
            elif isinstance(server, HttpMcpServer):
                config = McpServerConfig(url=server.url, headers={h.name: h.value for h in server.headers})
            else:
                log.warning("MCP server %r is not used: treechat runs stdio and HTTP servers", server.name)
                continue
        except ValidationError as err:
            log.warning("MCP server %r is not used: %s", server.name, err.errors()[0].get("msg", "not valid"))
            continue
        if name in {s.name for s in specs}:
            log.warning("MCP server %r is not used: another of the editor's servers has that name", server.name)
            continue
        specs.append(ServerSpec(name, config, ORIGIN, timeout, DEFAULT_STARTUP_TIMEOUT))
    return specs


__all__ = ["server_specs", "ORIGIN"]
