"""The full-screen app (Textual): a thin view over the controller `treechat.chat.Chat`."""

from .app import TreechatApp
from .run import run_tui

__all__ = ["TreechatApp", "run_tui"]
