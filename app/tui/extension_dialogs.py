"""The dialogs of MCP servers (tui/extensions_view.py): a tool call to confirm, a project's
servers to trust. Their own module so that the App's first frame does not load the dialogs
(treechat.widgets.screens) they are made from (app/tui/starting.py)."""

from __future__ import annotations

from textual.binding import Binding

from treechat.widgets.screens import ToolConfirmDialog

CALL_HINT = "y runs it · a runs it and allows this tool for this session · n or Esc refuses"
TRUST_HINT = "y starts them (and remembers) · a starts them this time · n never for this file · Esc not now"


class McpCallDialog(ToolConfirmDialog):
    """The bash tool's confirmation, for an MCP tool call (`a`: this tool, for the session)."""

    def hint(self) -> str:
        return CALL_HINT


class ProjectTrustDialog(ToolConfirmDialog):
    """Start a project's `.mcp.json` servers? y: yes, and remember; a: this time; n: never (for
    this content of the file); Esc: not now (asked at the next start)."""

    BINDINGS = [Binding("escape", "later", "Not now")]

    def hint(self) -> str:
        return TRUST_HINT

    def action_later(self) -> None:
        self.dismiss(None)
