"""The full-screen app (Textual): a thin view over the controller `treechat.chat.Chat`.

Its names load on first use: `treechat` reaches `run_tui` with the cyclic collector still on
and Textual not yet imported (app/tui/run.py turns the collector off first: see there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .app import TreechatApp
    from .run import run_tui

__all__ = ["TreechatApp", "run_tui"]


def __getattr__(name: str) -> object:
    if name == "TreechatApp":
        from .app import TreechatApp

        return TreechatApp
    if name == "run_tui":
        from .run import run_tui

        return run_tui
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
