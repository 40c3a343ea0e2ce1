"""Where the tree panel is: beside the transcript, `width` columns wide (remembered in state.json),
or under NARROW columns a drawer over the transcript (closed at first, or open when the tree has
the focus), so a reply is readable at full width; shown or hidden (Ctrl+B, F2, `/tree`).

The App's classes `-narrow` and `-tree-hidden` place it (styles.tcss names them in the panel's
rules only), so a change of them restyles the panel alone (the App's `add_class` routes them
here): a class on the App restyles every widget of the screen, tens of ms with a transcript
mounted. A resize is one layout at the new size (`MainScreen`), not part of a burst goes at once
(`resized`), and the panel is placed for the new width just before that layout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events

from treechat.widgets.textual_internals import OneLayoutScreen, resize_screens_now, restyle_keeping_parts

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from treechat.widgets.tree.messages import ResizeRequested


NARROW = 110  # columns: below this the tree panel becomes a drawer
PANEL_CLASSES = frozenset({"-narrow", "-tree-hidden"})  # the App's classes that place the panel
PANEL = "TreeView, TreeSpace"
RESIZE_BURST = 1 / 120  # seconds: resizes closer than this are one (Textual's own wait)


class MainScreen(OneLayoutScreen):
    """The App's own screen: it places the tree panel for a new width just before its layout at
    that size. (Done where the App hears of the resize, the restyle was laid out at the old size
    first: the App hands the new size to its screens a timer later, and the screen's update came
    between. That layout measured every mounted message at a width no frame showed.)
    A resize is one layout, and a frame draws only what is not covered (OneLayoutScreen,
    widgets/textual_internals.py)."""

    def __init__(self, fit: Callable[[int], None], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fit = fit

    def on_resize(self, event: events.Resize) -> None:
        # a handler of the subclass: it runs before Textual's own, which lays out at the size
        if event.size == self.laid_out_size:
            # the screen's own size, told to it after the layout that set it: laid out again,
            # the screen would measure and draw every widget again for nothing
            event.prevent_default()
            return
        self.fit(event.size.width)


class TreePanel:
    """Handed the Textual App itself: the panel is placed by the App's classes."""

    MIN_TREE, MIN_CHAT = 24, 40

    def __init__(self, app: App[int]) -> None:
        self.app = app
        self.width = 44  # columns, beside the transcript (a drawer on a narrow terminal has its own)
        self.home: Path | None = None  # where the width is remembered (known once the session is open)
        self._hidden_when_wide = False
        self._resized_at = 0.0  # time.monotonic() of the last resize from the terminal

    # ------------------------------------------------------------ shown or not

    @property
    def narrow(self) -> bool:
        """A drawer over the transcript."""
        return self.app.has_class("-narrow")

    @property
    def hidden(self) -> bool:
        return self.app.has_class("-tree-hidden")

    def show(self) -> None:
        self.app.remove_class("-tree-hidden")

    def hide(self) -> None:
        self.app.add_class("-tree-hidden")

    def close_drawer(self) -> bool:
        """On a narrow terminal, close the drawer (it covers the conversation); False when wide."""
        if self.narrow:
            self.hide()
        return self.narrow

    def toggle(self, tree: Widget, composer: Widget) -> None:
        """Ctrl+B: show the panel and focus the tree; from the tree, hide it (the composer has the focus)."""
        if self.hidden:
            self.show()
            tree.focus()
        elif not tree.has_focus:
            tree.focus()
        else:
            self.hide()
            composer.focus()

    def add(self, *names: str) -> None:
        """The App's `add_class` of panel classes: the panel restyled alone."""
        if not self.app.has_class(*names):
            self.app.add_class(*names, update=False)
            self._restyle()

    def remove(self, *names: str) -> None:
        if any(self.app.has_class(name) for name in names):
            self.app.remove_class(*names, update=False)
            self._restyle()

    # ------------------------------------------------------------ the terminal's width

    def fit(self, width: int) -> None:
        """Under NARROW columns the tree is a drawer over the transcript (closed at first, or open
        when the tree has the focus), so a reply is readable at full width; back above it, the
        tree is where it was."""
        app = self.app
        narrow = width < NARROW
        if narrow == self.narrow:
            return
        # both classes first, then one restyle of the panel (a restyle each was twice the work)
        if narrow:
            self._hidden_when_wide = self.hidden
            app.add_class("-narrow", update=False)
            if not any(panel.has_focus for panel in self._panels()):
                app.add_class("-tree-hidden", update=False)  # the drawer starts closed, unless you are in the tree
        else:
            app.remove_class("-narrow", update=False)
            if self._hidden_when_wide:
                app.add_class("-tree-hidden", update=False)
            else:
                app.remove_class("-tree-hidden", update=False)
        self._apply_width()
        self._restyle()

    def resized(self) -> None:
        """(The App's resize) Textual hands a new size to the screens 1/120 s later, to make one of
        a burst of them (a window being dragged); a resize that is not part of a burst goes at once."""
        now = time.monotonic()
        if now - self._resized_at > RESIZE_BURST:
            self.app.call_next(resize_screens_now, self.app)  # after Textual's own resize handler
        self._resized_at = now

    # ------------------------------------------------------------ the panel's width

    def set_width(self, width: int, *, keep: bool = False) -> None:
        """The panel `width` columns wide (within what leaves the conversation room); `keep`:
        remembered in state.json for the next start."""
        self.width = max(self.MIN_TREE, min(width, self.app.size.width - self.MIN_CHAT))
        self._apply_width()
        if keep and self.home is not None:
            self.app.run_worker(self._keep(self.home, self.width), group="state", exclusive=True)

    def resize(self, message: ResizeRequested) -> None:
        """The tree's border dragged, or `<` / `>`."""
        width = message.width if message.width is not None else self.width + message.delta
        self.set_width(width, keep=message.final)

    def remembered(self, home: Path) -> None:
        """The width kept from last time (once the session's home is known)."""
        from treechat.config.state import StateFile

        self.home = home
        kept = StateFile(home).read().get("tree_width")
        if isinstance(kept, int) and kept != self.width:
            self.set_width(kept)

    async def _keep(self, home: Path, width: int) -> None:
        from treechat.config.state import StateFile

        await asyncio.to_thread(StateFile(home).update, tree_width=width)

    def _apply_width(self) -> None:
        # an inline width beats the stylesheet, so it is cleared for the drawer (its width is 85%)
        for panel in self._panels():
            panel.styles.width = None if self.narrow else self.width

    def _restyle(self) -> None:
        if not self.app.screen_stack:
            return
        # The panel classes place the panel; no rule gives its parts (the tree's component
        # classes: the cursor, the roles, ...) a style by them, and Textual's restyle of a node
        # styles each of those parts again (17 for the tree: 2-5 ms of each resize across NARROW
        # columns and each Ctrl+B). Those are kept; a theme or focus change restyles them as ever.
        restyle_keeping_parts(self.app.stylesheet,
                              [node for panel in self._panels() for node in panel.walk_children(with_self=True)])

    def _panels(self) -> list[Widget]:
        """The tree panel (or its place): a child of #main (a query of the whole screen was ~3 ms)."""
        if not self.app.screen_stack:
            return []
        main = self.app.screen_stack[0].query_children("#main")
        return list(main.first().query_children(PANEL)) if main else []

