"""FittedFooter: Textual's footer, but keys that do not fit the width are left out from the end
(the palette key stays), so a narrow terminal shows fewer hints instead of hints cut in half."""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class FittedFooter(Footer):
    async def recompose(self) -> None:
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
