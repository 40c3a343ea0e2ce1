"""MCP servers as tools (issue 24): `[mcp_servers.NAME]` in config.toml and a project's `.mcp.json`.

`config.py` (the settings and `.mcp.json`, no SDK), `manager.py` (every server of a chat, started
in the background), `server.py` (one server's connection, restarts and calls, on the official
`mcp` SDK), `stdio.py` / `http.py` (the transports, bounded in bytes), `tools.py` (a server's tool
as an `AgentTool`), `results.py` (what a call returned, as content the model can read).

Only `config.py`, `manager.py` and `trust.py` may be imported at start: the SDK (about a second
of imports) is loaded on a thread by the manager once the first frame is drawn.
"""
