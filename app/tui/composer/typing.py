"""Who a key or a paste from the terminal is for, decided as it arrives (the App hands every one
here before Textual hands it to the focused widget, app.py's `on_event`).

You can always just type: a printable key that nothing focused is bound to moves the focus to the
composer, which then gets the key like any other; a paste always lands in the composer (unless a
box taking text has the focus). Keys parsed in the same burst as a paste are the paste's own tail:
a terminal that does not filter a pasted "end of paste" sequence hands the rest of the clipboard
over as keys, and a Ctrl+G in it opened $EDITOR, an Enter would send; they go in as text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events
from textual.css.query import NoMatches

if TYPE_CHECKING:
    from textual.app import App

    from treechat.widgets.composer.view import Composer

    from ..tree.panel import TreePanel

PASTE_TAIL = 0.02  # seconds: no person types this soon after a paste lands


class Typing:
    """Handed the Textual App itself: what has the focus, and the screen's bindings, are its."""

    def __init__(self, app: App[int], composer: Callable[[], Composer], panel: TreePanel) -> None:
        self.app, self.composer, self.panel = app, composer, panel
        self._paste_tail_until = float("-inf")

    def paste_tail(self, event: events.Key) -> events.Paste | None:
        """A key of a paste's tail, as the text it stands for (never a command); None for a key."""
        if event.time > self._paste_tail_until:
            return None
        self._paste_tail_until = event.time + PASTE_TAIL
        return events.Paste(_as_text(event))

    def pasted(self, event: events.Paste) -> None:
        """A paste: keys right behind it are its tail; it goes to the composer."""
        self._paste_tail_until = max(self._paste_tail_until, event.time + PASTE_TAIL)
        app = self.app
        if app.screen is not app.screen_stack[0]:
            return  # a dialog: its own box takes it, or nothing does
        from textual.widgets import Input, TextArea

        focused = app.focused
        if isinstance(focused, Input | TextArea) or getattr(focused, "takes_typing", False):
            return  # (dropped on the transcript or the tree, a paste was lost)
        app.screen.set_focus(self.composer())

    def key_to_stream(self) -> None:
        """A reply streaming draws what is due right after this key's frame (StreamingView.key_typed)."""
        view = sys.modules.get("treechat.widgets.transcript.view")
        if view is None or not self.app.screen_stack:
            return  # not loaded yet (startup/): nothing streams
        try:
            transcript = self.app.screen_stack[0].query_one(view.Transcript)
        except NoMatches:  # (not mounted yet: its place in the first frame)
            return
        transcript.key_typed()

    def to_composer(self, event: events.Key) -> None:
        """A printable key nothing focused is bound to: the focus goes to the composer first.

        Decided as each key arrives from the driver and before it is handed to the focused widget,
        so the keys behind it in the same burst follow it to the composer. (Decided where the key
        bubbles back unhandled, the rest of the burst was already queued to the panel: a "g" there
        jumped in the tree, a "y" copied in the transcript, and letters were lost.)"""
        app = self.app
        if not event.is_printable or not event.character or app.screen is not app.screen_stack[0]:
            return
        composer = self.composer()
        if composer.has_focus or getattr(app.focused, "takes_typing", False):
            return  # the composer, or a widget taking text right now (the tree's `/` filter)
        bound = app.screen.active_bindings.get(event.key)
        if bound is not None and bound.enabled:
            return  # a key the focused widget (or the App) acts on: its binding runs, not typing
        self.panel.close_drawer()  # (a drawer would cover what is being typed)
        app.screen.set_focus(composer)  # at once (focus() would defer it behind the queued keys)


def _as_text(key: events.Key) -> str:
    """A key that arrived as part of a paste, as the text it stands for (a control as its picture)."""
    if key.key in ("enter", "ctrl+j", "ctrl+m"):
        return "\n"
    if key.key == "tab":
        return "\t"
    if key.character and key.is_printable:
        return key.character
    from treechat.text.sanitize import visible

    return visible(key.character) if key.character else f"<{key.key}>"
