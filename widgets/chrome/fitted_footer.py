"""FittedFooter: Textual's footer, but keys that do not fit the width are left out from the end
(the palette key stays), so a narrow terminal shows fewer hints instead of hints cut in half."""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class FittedFooter(Footer):
    _pending = False  # a recompose is scheduled and has not started

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Textual schedules a whole recompose for every change of the bindings (a focus change
        makes two or three at once); one pending recompose reads them all, so more are not
        scheduled until it starts (at start-up that was five recomposes, 50 ms each, before the
        footer showed)."""
        if self._pending:
            return
        self._pending = True
        super().bindings_changed(screen)
        if not (screen.app.app_focus and self.is_attached and screen is self.screen):
            self._pending = False  # (nothing was scheduled)

    async def recompose(self) -> None:
        self._pending = False  # a change from now on needs another one
        await super().recompose()
        self.fit()

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        keys = list(self.query(FooterKey))
        palette = [k for k in keys if k.has_class("-command-palette")]
        room = self.size.width - sum(_width(k) for k in palette)
        used = 0
        for key in keys:
            if key in palette:
                continue
            width = _width(key)
            key.display = used + width <= room
            if key.display:
                used += width


def _width(key: FooterKey) -> int:
    """Cells the key takes: its text plus padding, border and margin."""
    styles = key.styles
    return key.get_content_width(Size(0, 0), Size(0, 0)) + styles.gutter.width + styles.margin.width
