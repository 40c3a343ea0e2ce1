"""FittedFooter: the focused context's key hints as one line of text.

Data in: the screen's active bindings (Textual's ``bindings_updated_signal``, as its ``Footer``
listens to). Shows what Textual's ``Footer`` shows — one hint per action with ``show=True``, in
the same order, the palette key on the right — but keys that do not fit the width are left out
from the end (the palette key stays), so a narrow terminal shows fewer hints instead of hints cut
in half. A click (mouse down) on a hint presses its key, as ``FooterKey`` does; a disabled hint
rings the bell. Posts nothing of its own.

One widget drawing one line, not Textual's container of a ``FooterKey`` widget per hint: that
footer recomposed its ~20 widgets on every focus change (moving into the tree panel did, twice),
and every recompose was a mount and a layout of the whole screen in the frame the key waited for
(issue 26: 100-250 ms of the first tree key). Here a change of the bindings is a repaint of one
line, and fitting is arithmetic on the hints' widths.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

GAP = "▏"  # the palette key's left edge (Textual's footer draws a vkey border there)


@dataclass(frozen=True)
class Hint:
    key: str  # the key pressed on a click
    key_display: str
    description: str
    action: str
    enabled: bool = True
    tooltip: str = ""
    palette: bool = False  # the command palette's key: kept on the right, whatever the width

    @property
    def parts(self) -> tuple[str, str]:
        """The key's text and the description's, padded as Textual's footer pads them: " key "
        and "description "; the palette's "key" and " description " after its edge."""
        description = self.description
        if self.palette:
            return self.key_display, f" {description} " if description else " "
        return f" {self.key_display} ", f"{description} " if description else ""

    @property
    def width(self) -> int:
        """Cells it takes (the palette's edge not counted)."""
        return Text("".join(self.parts)).cell_len


class FittedFooter(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"fitted-footer--key", "fitted-footer--description", "fitted-footer--hover",
                         "fitted-footer--gap"}
    DEFAULT_CSS = """
    FittedFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        text-overflow: clip;
        & > .fitted-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .fitted-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .fitted-footer--hover {
            background: $block-hover-background;
        }
        & > .fitted-footer--gap {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._hints: list[Hint] | None = None  # None: to be read from the bindings when drawn
        self._spans: list[tuple[int, int, Hint]] = []  # (x, end, hint) of what the last draw showed
        self._hover: Hint | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        """Textual says the bindings changed after every key that ran an action, and two or three
        times on a focus change: the line is repainted only when what it shows changed. (A
        repaint of the bottom line each key made every frame's update region reach down to it,
        and Textual draws every widget in that region: the transcript, the tree, the status bar.)"""
        if self._hints is not None and self._read_hints() != self._hints:
            self._hints = None
            self.refresh()

    # ------------------------------------------------------------ what is shown

    @property
    def hints(self) -> list[Hint]:
        """Every hint of the focused context, in order, the palette's last (whether it fits or not)."""
        if self._hints is None:
            self._hints = self._read_hints()
        return self._hints

    @property
    def shown(self) -> list[Hint]:
        """The hints that fit the current width, in the order drawn (the palette's last)."""
        return fit(self.hints, self.size.width)

    def _read_hints(self) -> list[Hint]:
        if not self.is_attached:
            return []
        app, active = self.app, self.screen.active_bindings
        hints: list[Hint] = []
        seen: set[str] = set()
        # as Textual's Footer: the first shown binding of each action, in the bindings' order
        for _node, binding, enabled, tooltip in active.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            hints.append(Hint(binding.key, app.get_key_display(binding), binding.description, binding.action,
                              enabled, tooltip))
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, tooltip = active[app.COMMAND_PALETTE_BINDING]
            hints.append(Hint(binding.key, app.get_key_display(binding), binding.description, binding.action,
                              enabled, binding.tooltip or binding.description, palette=True))
        return hints

    # ------------------------------------------------------------ drawing

    def render(self) -> Text:
        width = self.size.width
        shown = fit(self.hints, width)
        base = self.rich_style
        key_style = base + self.get_component_rich_style("fitted-footer--key", partial=True)
        text_style = base + self.get_component_rich_style("fitted-footer--description", partial=True)
        hover = self.get_component_rich_style("fitted-footer--hover", partial=True)
        dim = Style(dim=True)
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, Hint]] = []
        left = [h for h in shown if not h.palette]
        palette = [h for h in shown if h.palette]
        for hint in left:
            spans.append(self._append(line, hint, key_style, text_style, hover, dim))
        if palette:
            hint = palette[0]
            pad = width - line.cell_len - hint.width - 1  # the edge before it
            if pad >= 0:
                line.append(" " * pad, base)
                line.append(GAP, self.get_component_rich_style("fitted-footer--gap"))
                spans.append(self._append(line, hint, key_style, text_style, hover, dim))
        self._spans = spans
        return line

    def _append(self, line: Text, hint: Hint, key_style: Style, text_style: Style, hover: Style,
                dim: Style) -> tuple[int, int, Hint]:
        start = line.cell_len
        extra = Style.chain(hover if hint == self._hover else Style(), dim if not hint.enabled else Style())
        key, description = hint.parts
        line.append(key, key_style + extra)
        if description:
            line.append(description, text_style + extra)
        return start, line.cell_len, hint

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()

    # ------------------------------------------------------------ the mouse

    def hint_at(self, x: int) -> Hint | None:
        """The hint drawn at column x of this widget (None: none)."""
        return next((hint for start, end, hint in self._spans if start <= x < end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        hint = self.hint_at(event.x)
        if hint is None:
            return
        event.stop()
        if hint.enabled:
            self.app.simulate_key(hint.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self.hint_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, hint: Hint | None) -> None:
        if hint != self._hover:
            self._hover = hint
            self.tooltip = (hint.tooltip or None) if hint is not None else None
            self.refresh()


def fit(hints: list[Hint], width: int) -> list[Hint]:
    """The hints that fit `width` cells: the palette's always (its edge takes one more), then the
    others in order, each one that does not fit in what is left skipped."""
    palette = [h for h in hints if h.palette]
    room = width - sum(h.width + 1 for h in palette)
    shown: list[Hint] = []
    used = 0
    for hint in hints:
        if hint.palette:
            continue
        if used + hint.width <= room:
            shown.append(hint)
            used += hint.width
    return shown + palette
