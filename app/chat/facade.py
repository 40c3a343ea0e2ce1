"""The controller: the one thing a front end talks to, and the one owner of a chat's state.

`Chat` holds the current `Session` (the tree and its leaf) and, once something needs a model,
its `AgentSession`. Front ends call its methods (send, steer, stop, move, fork, compact, …) and
subscribe to what it tells (`treechat.chat.events`: one `ChatDelta` per turn of the event loop,
and the discrete events); they never reach into the agent or the storage themselves. It imports
no Textual, so the TUI and print mode share every rule.

Its parts are cut by job, each a module of this package, stacked in this order (each may call
what is below it): `core` (the state, the bus, what is current; `models`, `extras` and `tree` are
its bases), `shown` (the path, header and status to show), `observe` (appends and agent events
become state and changes), `runs` (sending, the queue, stop), `sessions` (open, new, close),
`live` (other writers), `workspace` (files and restores), `navigation` (moving in the tree),
`settings` (model, thinking, instructions) and `commands` (fork, label, compact, export…).
Errors a person can act on are `ChatError`s with one sentence.
"""

from __future__ import annotations

from treechat.chat.commands import ChatCommands
from treechat.chat.models import ChatError

__all__ = ["Chat", "ChatError"]


class Chat(ChatCommands):
    """The façade front ends use (see the module's doc for its parts)."""
