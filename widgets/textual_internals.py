"""Every use of Textual's private names, in one module (the pin: ``textual>=8.2.8,<8.3``).

Textual's public API does not reach what these do; each says why it is here and what public API
would replace it. Nothing else in treechat (app, widgets, tests, benches) names a private
attribute of a Textual object or imports a ``textual._`` module: ``tests/test_structure.py``
checks it, and ``tests/widgets/test_textual_internals.py`` names the pinned version and fails,
naming what is missing, when a Textual release drops or changes one of them (run it first after
moving the pin).

Three kinds live here: the speed work of issue 26 (a resize is one layout, a frame renders only
what is not covered, the tree panel restyled alone), small fixes of Textual's behaviour (a key
sequence its parser does not know, whether a scroll anchor still holds), and what tests and
benches read of a running App (the frames handed to the driver, the toasts, the driver's input).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from textual import _ansi_sequences
from textual._compositor import Compositor
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.notifications import Notification

R = TypeVar("R")  # what an App's run returns

PINNED = (">=8.2.8", "<8.3")  # pyproject's pin; the test compares it with the running version

# ------------------------------------------------------------------ a frame: only what is not covered


class CoveredCompositor(Compositor):
    """Textual's compositor, drawing only what is not covered.

    Textual builds a frame front to back: every visible widget renders all its lines in the update's
    crop, each line is cut into one strip per column span ("chop") and the front-most strip of a span
    wins. The containers behind (the screen, the main row, the chat column, the transcript, each
    message's frame) are rendered and cut too, though what is in front covers nearly all of them: at
    160x45 about half a full frame's strips, made and thrown away (issue 26: a resize's frame is a full
    one). Here a widget renders only the lines on which some span it reaches is still open, and only
    those lines are cut; what a frame shows is the same (the front-most strip of each span).

    Overrides ``Compositor._render_chops`` (with ``_get_renders``'s crop rules). No public API
    replaces it: a compositor that skipped covered widgets would have to be Textual's own
    (tests/tui/test_resize.py compares its frames with Textual's, cell for cell)."""

    def _render_chops(self, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            if crop and not crop.overlaps(clip):
                continue
            shown = intersection(region, clip)  # (Textual's render crop: the part inside the clip)
            if not (shown.width and shown.height):
                continue
            first_cut, last_cut = shown.column_span
            spans: dict[int, list[int]] = {}  # line -> the cuts it reaches there, while one is open
            for y in shown.line_range:
                if not is_rendered_line(y):
                    continue
                line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                line = chops[y]
                if any(line.get(cut, False) is None for cut in line_cuts[:-1]):  # (the last: its right edge)
                    spans[y] = line_cuts
            if not spans:
                continue  # covered wherever this update draws: not rendered at all
            top, bottom = min(spans), max(spans) + 1
            strips = widget.render_lines(Region(shown.x - region.x, top - region.y, shown.width, bottom - top))
            x = shown.x
            for y, strip in zip(range(top, bottom), strips):
                reached = spans.get(y)
                if reached is None:
                    continue
                line = chops[y]
                for cut, piece in zip(reached, strip.divide([cut - x for cut in reached[1:]])):
                    if line.get(cut) is None:
                        line[cut] = piece
        return chops  # type: ignore[return-value]  # (every span filled: the screen covers all)


class CoveredScreen(Screen[None]):
    """A screen whose frames are built by ``CoveredCompositor`` (it replaces the screen's
    ``_compositor``, which Textual makes in ``Screen.__init__`` with no way to choose another)."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = CoveredCompositor()

    @property
    def laid_out_size(self) -> Size:
        """The size the screen was last laid out at (its compositor's)."""
        return self._compositor.size


# ------------------------------------------------------------------ a resize: one layout


def _told_quietly(widget: Widget, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
    """``Widget._size_updated`` as Textual calls it after a scroll: the virtual size set quietly."""
    return _size_updated(widget, size, virtual_size, container_size, layout=False)


_size_updated = Widget._size_updated


def _bars(widget: Widget) -> tuple[bool, bool]:
    return widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar


class OneLayoutScreen(CoveredScreen):
    """A screen laid out once per resize, its widgets told their sizes without being refreshed.

    A layout tells each widget its size and virtual size. Textual sets the virtual size as a
    reactive that refreshes the widget and asks for another layout: of what this one just measured
    (after a resize every mounted widget asked, a second whole-screen layout; each ask emptied its
    ancestors' arrangement caches, so going back to a width seen before measured everything again),
    and every widget was painted twice, in this layout's frame and again in the next (10-20 ms at
    160x45). Here the sizes are told as Textual's own scroll-only layout tells them (no refresh, no
    ask): this layout's frame paints whatever moved or changed size. Any other ask made during it is
    dropped too; an ask made before it stays, and so does a scrollbar that came or went (the content
    beside it has a new width: that needs the next layout).

    Overrides ``Screen._refresh_layout`` and patches ``Widget._size_updated`` for its duration
    (synchronous: put back before anything else runs); reads ``Widget._layout_required``. A public
    "set the virtual size without a refresh" (Textual's scroll path has it, privately) would replace
    both."""

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        before = {widget: _bars(widget) for widget in self._compositor.widgets if not widget._layout_required}
        Widget._size_updated = _told_quietly  # type: ignore[method-assign,assignment]  # (put back below)
        try:
            super()._refresh_layout(size, scroll)
        finally:
            Widget._size_updated = _size_updated  # type: ignore[method-assign]
        for widget, bars in before.items():
            if _bars(widget) == bars:
                widget._layout_required = False


def resize_screens_now(app: App[R]) -> None:
    """Hand a new terminal size to the screens now (Textual waits 1/120 s for more of a burst: a
    window being dragged). Public API would be a resize delay of 0; it is ``App._resize_timer``
    and ``App._check_resize`` today."""
    if app._resize_timer is not None:  # (not yet handed over)
        app._check_resize()


class SizeToldScrollView(ScrollView):
    """A scroll view told by the layout when its size changes (``size_told``), in that layout's
    frame: ``on_resize`` comes a frame later, so what it scrolls into view shows one frame late.

    Overrides ``ScrollView._size_updated``; a public "after layout" hook on the widget would
    replace it."""

    def size_told(self, size: Size) -> None:
        """The layout gave the widget a new size (non-zero height)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        if changed and size.height:
            self.size_told(size)
        return changed


# ------------------------------------------------------------------ restyling one panel


def _kept(node: DOMNode) -> None:
    """(Stylesheet._process_component_classes while the panel is placed: its parts keep their styles.)"""


def restyle_keeping_parts(stylesheet: Stylesheet, nodes: Iterable[DOMNode]) -> None:
    """Restyle `nodes` (``Stylesheet.update_nodes``) without styling their component classes again.

    The App's panel classes (``-narrow``, ``-tree-hidden``) place the tree panel; no rule gives its
    parts (the tree's cursor, its roles: 17 component classes) a style by them, and Textual's
    restyle of a node styles each of those parts again: 2-5 ms of each resize across the narrow
    width and each Ctrl+B. Replaces ``Stylesheet._process_component_classes`` on the instance for
    the call (removed after: a theme or focus change restyles them as ever). A public
    ``update_nodes(..., components=False)`` would replace it."""
    stylesheet._process_component_classes = _kept  # type: ignore[method-assign]  # (removed below)
    try:
        stylesheet.update_nodes(nodes, animate=True)
    finally:
        del stylesheet._process_component_classes


def component_styles_patched(stylesheet: Stylesheet) -> bool:
    """Whether ``restyle_keeping_parts`` left its patch on `stylesheet` (it never should)."""
    return "_process_component_classes" in getattr(stylesheet, "__dict__", {})


def component_classes(widget: Widget) -> set[str]:
    """The component classes `widget` styles (``Widget._get_component_classes``)."""
    return set(widget._get_component_classes())


def forget_component_styles(widget: Widget) -> None:
    """Empty the widget's cache of component styles (``Widget._rich_style_cache``), so the next
    ``get_component_rich_style`` reads the stylesheet's."""
    widget._rich_style_cache.clear()


# ------------------------------------------------------------------ keys as terminals send them


@dataclass(frozen=True)
class _Key:
    """What the parser's table entries give it: a key name as ``.value``."""

    value: str


# Alt+Enter: tmux, xterm, GNOME Terminal and iTerm2 (by default) send ESC CR for it. Textual's parser
# knows no "\x1b\r" sequence, so after its escape delay it reissues the bytes as separate keys and
# the Alt is lost: the documented follow-up key would steer. Registered, the parser reports
# "alt+enter" at once (terminals with the kitty keyboard protocol send a CSI u sequence, which
# Textual decodes itself). ``textual._ansi_sequences.ANSI_SEQUENCES_KEYS`` is the parser's table; a
# public way to add a sequence would replace this.
EXTRA_SEQUENCES: dict[str, tuple[_Key, ...]] = {"\x1b\r": (_Key("alt+enter"),)}


def register_key_sequences() -> None:
    table: dict[str, object] = _ansi_sequences.ANSI_SEQUENCES_KEYS  # type: ignore[assignment]  # (a dict, typed Mapping)
    for sequence, keys in EXTRA_SEQUENCES.items():
        table.setdefault(sequence, keys)


def parse_terminal_input(data: str) -> list[Message]:
    """`data` as a terminal sends it, parsed as the driver parses it (``textual._xterm_parser``)."""
    parser = XTermParser()
    events = list(parser.feed(data))
    return events + list(parser.feed(""))  # a trailing lone ESC, flushed


# ------------------------------------------------------------------ scrolling


def anchor_holds(widget: Widget) -> bool:
    """Anchored and not released by a scroll: Textual keeps the end in view as content grows.
    ``Widget.is_anchored`` says only that an anchor was set; whether a scroll released it is
    ``Widget._anchor_released`` (a public ``is_anchor_released`` would replace this)."""
    return widget._anchored and not widget._anchor_released


# ------------------------------------------------------------------ what a running App shows (tests, benches)


DisplayHook = Callable[[Screen[object], object], None]


def on_display(app: App[R] | type[App[R]], after: DisplayHook) -> None:
    """Call ``after(screen, update)`` after every update the App hands to its driver (a frame; an
    update of None draws nothing). Wraps ``App._display``, on an App or on the class: what a terminal
    is written is what tests and benches wait on."""
    display = app._display

    def watched(*args: object) -> None:
        display(*args)  # type: ignore[arg-type]  # (bound or not: the App's own arguments)
        screen, update = args[-2], args[-1]
        assert isinstance(screen, Screen)
        after(screen, update)

    if isinstance(app, type):
        app._display = watched  # type: ignore[method-assign,assignment]  # (the class's, for every App)
    else:
        app._display = watched  # type: ignore[method-assign,assignment]  # (the instance attribute wins: Screen calls self.app._display)


def batching(app: App[R]) -> bool:
    """Inside ``App.batch_update`` (a frame drawn now would be a half-made one)."""
    return app._batch_count > 0


def screen_strips(screen: Screen[object]) -> list[Strip]:
    """What `screen` shows now, a strip per line (its compositor's render, as a frame is built)."""
    return list(screen._compositor.render_strips())


def screen_text(screen: Screen[object]) -> str:
    """What `screen` shows now, as plain text (every cell)."""
    return "\n".join(strip.text for strip in screen_strips(screen))


def render_chops(screen: Screen[object], region: Region | None, lines: Callable[[int], bool],
                 compositor_class: type[Compositor] | None = None) -> Sequence[Mapping[int, Strip | None]]:
    """The strips of `region` of `screen` (None: all of it) as its compositor cuts them for a frame,
    on the lines `lines` says (``Compositor._render_chops``; `compositor_class`: as another class
    would)."""
    compositor = screen._compositor
    crop = region if region is not None else compositor.size.region
    chops = (compositor_class or type(compositor))._render_chops(compositor, crop, lines)
    return chops


def compositor_class(screen: Screen[object]) -> type[Compositor]:
    """The class of the compositor that builds `screen`'s frames."""
    return type(screen._compositor)


def textual_compositor() -> type[Compositor]:
    """Textual's own compositor class (what ``CoveredCompositor`` must draw the same as)."""
    return Compositor


def count_layouts(screen: Screen[object], after: Callable[[], None]) -> None:
    """Call `after` after each layout of `screen` (wraps its ``_refresh_layout``)."""
    layout = screen._refresh_layout

    def watched(size: Size | None = None, scroll: bool = False) -> None:
        layout(size, scroll)
        after()

    screen._refresh_layout = watched  # type: ignore[method-assign]


def notifications(app: App[R]) -> list[Notification]:
    """The toasts the App shows now (``App._notifications``)."""
    return list(app._notifications)


def send_from_terminal(app: App[R], message: Message) -> None:
    """`message` (a key, a paste) posted as the terminal driver's input thread posts it."""
    driver = app._driver
    assert driver is not None
    driver.send_message(message)


def set_terminal_size(app: App[R], size: Size) -> None:
    """The driver's idea of the terminal's size, as on SIGWINCH (before the Resize it posts)."""
    driver = app._driver
    assert driver is not None
    driver._size = (size.width, size.height)


# ------------------------------------------------------------------ what this module relies on


def _relied_on() -> tuple[dict[type, tuple[str, ...]], dict[type, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(names on each class, names each instance has, the parameters of each overridden method)."""
    from textual.driver import Driver

    on_class: dict[type, tuple[str, ...]] = {
        Compositor: ("_render_chops", "cuts", "visible_widgets", "render_strips"),
        Screen: ("_refresh_layout",), Widget: ("_size_updated", "_get_component_classes"),
        ScrollView: ("_size_updated",), App: ("_display", "_check_resize"),
        Stylesheet: ("_process_component_classes", "update_nodes"),
    }
    on_instance: dict[type, tuple[str, ...]] = {
        App: ("_resize_timer", "_batch_count", "_notifications", "_driver"), Screen: ("_compositor",),
        Widget: ("_anchored", "_anchor_released", "_layout_required", "_rich_style_cache"), Driver: ("_size",),
        Compositor: ("size", "widgets"),
    }
    parameters = {
        "Compositor._render_chops": ("self", "crop", "is_rendered_line"),
        "Screen._refresh_layout": ("self", "size", "scroll"),
        "Widget._size_updated": ("self", "size", "virtual_size", "container_size", "layout"),
        "ScrollView._size_updated": ("self", "size", "virtual_size", "container_size", "layout"),
        "App._display": ("self", "screen", "renderable"),
    }
    return on_class, on_instance, parameters


def missing_private_names() -> list[str]:
    """What this module relies on that the running Textual lacks (empty under the pin): each name
    on its class, each instance attribute (an instance made, or the class's __init__ read), each
    overridden method's parameters, the parser's sequence table."""
    import inspect

    on_class, on_instance, parameters = _relied_on()
    missing = [f"{owner.__name__}.{name}" for owner, names in on_class.items() for name in names
               if not hasattr(owner, name)]
    for owner, names in on_instance.items():
        try:
            made: object = owner()
        except (TypeError, RuntimeError):  # (a driver needs an App and a loop: its __init__ is read)
            made = None
        source = inspect.getsource(owner) if made is None else ""
        missing += [f"{owner.__name__}().{name}" for name in names
                    if (made is not None and not hasattr(made, name)) or (made is None and f"self.{name} " not in source)]
    classes = {owner.__name__: owner for owner in on_class}
    for qualified, wanted in parameters.items():
        owner_name, name = qualified.split(".")
        method = getattr(classes[owner_name], name, None)
        if method is None or tuple(inspect.signature(method).parameters) != wanted:
            missing.append(f"{qualified}{wanted}")
    if not isinstance(_ansi_sequences.ANSI_SEQUENCES_KEYS, dict):
        missing.append("textual._ansi_sequences.ANSI_SEQUENCES_KEYS (a dict)")
    return missing
