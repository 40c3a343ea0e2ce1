"""The controller (`Chat`): the one thing a front end talks to, and the one owner of a chat's state.

`from treechat.chat import Chat, ChatError` loads the controller on first use (PEP 562): the
package itself is light, so the TUI's first frame can import `treechat.chat.events` (the typed
events and the delta) without the session, the agent and the storage behind them (issue 27).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treechat.chat.errors import ChatError
    from treechat.chat.facade import Chat

__all__ = ["Chat", "ChatError"]


def __getattr__(name: str) -> object:
    if name == "Chat":
        from treechat.chat.facade import Chat

        return Chat
    if name == "ChatError":
        from treechat.chat.errors import ChatError

        return ChatError
    raise AttributeError(f"module 'treechat.chat' has no attribute {name!r}")
