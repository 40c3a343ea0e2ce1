
"""TreeView: the session tree panel, drawn line by line (Textual Line API: only the lines on
screen are drawn, whatever the size of the tree).

Data in (from the App):
    ``set_index(index, leaf_id, active_path_ids=None)`` the whole tree: the controller's ``TreeIndex``
                                                   (read only); rebuilds the lines in O(n). The
                                                   cursor starts on the leaf, scrolled into view
    ``set_rows(rows, leaf_id, active_path_ids)``   the same from bare rows (an index is built)
    ``add_row(row)``                               a row the index gained while the agent runs; the
                                                   cursor stays on its entry, the view does not jump
    ``replace_row(row)``                           the index replaced a row (a new label)
    ``set_leaf(leaf_id, active_path_ids=None)``    the leaf moved; redraws markers only (if the
                                                   cursor was on the old leaf it follows, in view)
    ``set_filter(mode)`` / ``filter_mode``          "default" | "no-tools" | "user-only" | "labeled" | "all"
    ``set_query(text)``                            narrow to the rows matching every word (also typed
                                                   after ``/``); ``match_count`` says how many
    ``move_cursor_to(entry_id)``                   select and scroll into view (a search hit, a move)
    ``set_details(entry_id, text)``                more about a row for its tooltip (model, tokens),
                                                   the answer to ``DetailsRequested``
    ``set_running(tips)``                          the tips of the runs going: each row (or its
                                                   nearest shown ancestor) gets a spinner in the
                                                   gutter; ``running_rows`` says which
    ``cursor_id``                                  the entry under the cursor (read)

Messages out: ``NodeChosen(entry_id)`` (Enter, click), ``PreviewRequested(entry_id)`` (Space),
``SubagentRequested(entry_id)`` (o on a sub-agent's result, the ``⇲`` rows),
``LabelRequested(entry_id)`` (L), ``ForkRequested(entry_id)`` (f), ``BackRequested()`` (Backspace),
``DetailsRequested(entry_id)`` (the pointer rests on a row whose details were not given yet).
Keys are in ``widgets.keymap`` (context "tree"); they act only while the tree has focus.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import TypeAlias

from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.timer import Timer

from treechat.storage.base import TreeRow
from treechat.storage.tree.index import TreeIndex, TreeSnapshot

from ..keymap import bindings_for
from ..textual_internals import SizeToldScrollView
from . import messages
from .drawing import SPINNER, LineDrawing, RunMarks, is_subagent_row
from .filter import FILTERS, QueryTyping, query_words
from .layout import ActivePath, Lines, TreeLayout
from .nav import fork_above, fork_below, next_match
from .tooltip import RowTooltips


class TreeView(SizeToldScrollView, can_focus=True):
    BINDINGS = bindings_for("tree")

    COMPONENT_CLASSES = {
        "tree-view--cursor", "tree-view--plain", "tree-view--connector", "tree-view--active",
        "tree-view--leaf", "tree-view--label", "tree-view--user", "tree-view--assistant",
        "tree-view--tool", "tree-view--summary", "tree-view--settings", "tree-view--other",
        "tree-view--fold", "tree-view--error", "tree-view--aborted", "tree-view--match",
        "tree-view--context", "tree-view--running",
    }

    # The cursor row: a neutral background unfocused (visible on dark and light themes), $accent
    # focused; either way one contrasting text colour over the whole row. Coloured text uses the themes'
    # $text-* colours (tinted for contrast on the background; $warning itself is unreadable on a
    # light theme).
    DEFAULT_CSS = """
    TreeView { overflow-x: hidden; }
    TreeView > .tree-view--cursor { background: $foreground 20%; color: auto 90%; }
    TreeView:focus > .tree-view--cursor { background: $accent; color: auto 90%; }
    TreeView > .tree-view--connector { color: $text-muted; }
    TreeView > .tree-view--active { color: $text-success; text-style: bold; }
    TreeView > .tree-view--leaf { color: $text-warning; text-style: bold; }
    TreeView > .tree-view--label { color: $text-secondary; }
    TreeView > .tree-view--user { color: $text-primary; }
    TreeView > .tree-view--assistant { color: $text; }
    TreeView > .tree-view--tool { color: $text-muted; }
    TreeView > .tree-view--summary { color: $text-warning; text-style: italic; }
    TreeView > .tree-view--settings { color: $text-disabled; }
    TreeView > .tree-view--other { color: $text-muted; }
    TreeView > .tree-view--fold { color: $text-accent; }
    TreeView > .tree-view--error { color: $text-error; }
    TreeView > .tree-view--aborted { color: $text-warning; }
    TreeView > .tree-view--match { background: $warning 35%; text-style: bold; }
    TreeView > .tree-view--context { color: $text-disabled; }
    TreeView > .tree-view--running { color: $text-accent; text-style: bold; }
    """

    filter_mode: reactive[str] = reactive("default", init=False)

    # its messages (tree/messages.py, where the App's first frame can name them)
    EntryMessage: TypeAlias = messages.EntryMessage
    NodeChosen: TypeAlias = messages.NodeChosen
    PreviewRequested: TypeAlias = messages.PreviewRequested
    SubagentRequested: TypeAlias = messages.SubagentRequested
    LabelRequested: TypeAlias = messages.LabelRequested
    ForkRequested: TypeAlias = messages.ForkRequested
    DetailsRequested: TypeAlias = messages.DetailsRequested
    BackRequested: TypeAlias = messages.BackRequested
    ResizeRequested: TypeAlias = messages.ResizeRequested

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.layout_data = TreeLayout()
        self._index: TreeSnapshot | None = None
        self.reading = 0  # entries of a big session's tree still being read (the index is its path)
        self.leaf_id: str | None = None
        self._active = ActivePath()  # slots of the path root -> leaf
        self.cursor = 0
        self._query_typing = QueryTyping(lambda: self.layout_data.query, self.set_query, self.call_later,
                                         self._update_subtitle)
        self._remembered: str | None = None  # the cursor's last entry (a filter showing nothing keeps it)
        self._tips = RowTooltips(self, lambda: self.layout_data.rows, self._ask_details, self.running_rows_set)
        self.border_title = "tree"
        self._drawing = LineDrawing()
        self._frame: tuple[Style, int] | None = None  # (base style, width) while a frame draws the lines
        self._runs = RunMarks()
        self._spin = 0  # the spinner's frame
        self._spin_timer: Timer | None = None  # ticks only while some run goes

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._drawing.strips.clear())

    # ------------------------------------------------------------ data in

    @property
    def lines(self) -> Lines:
        return self.layout_data.lines

    def _id_at_line(self, line: int) -> str | None:
        data = self.layout_data
        return data.index.id_at(data.line_slot(line)) if 0 <= line < len(data) else None

    @property
    def cursor_id(self) -> str | None:
        return self._id_at_line(self.cursor)

    @property
    def match_count(self) -> int:
        """Rows matching the query (0 without one)."""
        return len(self.layout_data.matches)

    @property
    def active_ids(self) -> set[str]:
        """The entries of the active path (root → leaf)."""
        return self._active.ids(self.layout_data.index)

    def set_index(self, index: TreeSnapshot, leaf_id: str | None, active_path_ids: Set[str] | None = None,
                  *, loading: int = 0, keep_cursor: bool = False) -> None:
        """A whole (new) tree: the controller's index, read, never changed here. The cursor
        starts on the leaf, scrolled into view (`keep_cursor`: stays on its entry, as when a big
        session's whole tree replaces its path). `loading`: the index is the path of a session of
        that many entries whose whole tree is being read (the panel says so)."""
        keep = self.cursor_id if index is self._index or keep_cursor else None
        self.reading = loading
        self._index = index
        self.leaf_id = leaf_id
        self.layout_data.set_index(index)
        self._active = ActivePath()
        self._active.follow(index, leaf_id, active_path_ids)
        retired, self.layout_data.retired = self.layout_data.retired, []
        self.call_after_refresh(retired.clear)  # free the previous tree after the first frame
        if keep is None or self.layout_data.index_of(keep) is None:
            keep = leaf_id
        self._after_change(keep, top_id=None, center=True)

    def set_rows(self, rows: list[TreeRow], leaf_id: str | None, active_path_ids: Set[str] | None = None) -> None:
        """The same from bare rows (tests, tools): an index is built for them."""
        self.set_index(TreeIndex.build(rows), leaf_id, active_path_ids)

    def add_row(self, row: TreeRow) -> None:
        """A row the index gained while the agent runs; the cursor stays on its entry."""
        keep, top = self.cursor_id, self._top_id()
        if self.layout_data.add_row(row):
            # fast path: one line inserted; shift the cursor/scroll if it landed above them
            at = self.layout_data.index_of(row.id)
            if at is not None and at <= self.cursor and keep is not None:
                self.cursor += 1
            if at is not None and at < round(self.scroll_y) + 1 and self.scroll_y > 0:
                self._scroll_y_to(self.scroll_y + 1)
            self._sync_size()
        else:
            self._after_change(keep, top_id=top)

    def replace_row(self, row: TreeRow) -> None:
        """The index replaced a row (its label changed)."""
        at = self.layout_data.replace_row(row)
        if at is not None:
            self.refresh_line(at)

    def set_leaf(self, leaf_id: str | None, active_path_ids: Set[str] | None = None) -> None:
        follow = self.cursor_id is not None and self.cursor_id == self.layout_data.shown_ancestor(self.leaf_id)
        self.leaf_id = leaf_id
        self._active.follow(self.layout_data.index, leaf_id, active_path_ids)
        if follow:
            self.move_cursor_to(leaf_id)
        self.refresh()

    def set_filter(self, mode: str) -> None:
        if mode not in FILTERS:
            raise ValueError(f"unknown tree filter {mode!r}; one of {', '.join(FILTERS)}")
        self.filter_mode = mode

    def watch_filter_mode(self, mode: str) -> None:
        keep = self.cursor_id
        self.layout_data.mode = mode
        self.layout_data.rebuild()
        self._after_change(keep, top_id=None, center=True)

    def set_query(self, text: str) -> None:
        """Narrow the rows to the query's matches; the cursor stays on its row if it matches,
        else goes to the first match (an empty query shows the whole tree again, the cursor on
        the same row)."""
        keep = self.cursor_id
        data = self.layout_data
        data.query = text
        data.rebuild()
        if data.matches and keep not in data.matches:
            first = next_match(data, -1, 1)
            keep = self._id_at_line(first) if first is not None else keep
        self._after_change(keep, top_id=None, center=True)

    def move_cursor_to(self, entry_id: str | None) -> None:
        if entry_id is not None and self.layout_data.unfold_to(entry_id):
            self.layout_data.rebuild()
            self._sync_size()
        shown = self.layout_data.shown_ancestor(entry_id)
        at = self.layout_data.index_of(shown)
        if at is not None:
            self._set_cursor(at, center=True)

    def set_details(self, entry_id: str, text: str) -> None:
        """More about a row (model, tokens, …) for its tooltip; shown at once if it is hovered."""
        self._tips.set_details(entry_id, text)

    SPIN_SECONDS = 0.2  # a spinner frame: alive, and a repaint of a few rows five times a second

    def set_running(self, tips: Sequence[str]) -> None:
        """The tips of the runs going (the entries they append under): each gets a spinner in
        its row's gutter (on its nearest shown ancestor when the filter or a fold hides it) until
        it is no longer handed in. A repaint of the marked rows, never a relayout."""
        before = self._runs.lines(self.layout_data)
        if not self._runs.set_tips(tips):
            return
        for at in {*before, *self._runs.lines(self.layout_data)}:
            self.refresh_line(at)
        if self._tips.hovered is not None:
            self._tips.show()  # (it may say "running")
        if self._runs.tips and self._spin_timer is None:
            self._spin_timer = self.set_interval(self.SPIN_SECONDS, self._spin_once)
        elif not self._runs.tips and self._spin_timer is not None:
            self._spin_timer.stop()
            self._spin_timer = None

    @property
    def running_tips(self) -> tuple[str, ...]:
        """The tips handed to ``set_running``."""
        return self._runs.tips

    def running_rows_set(self) -> set[str]:
        data = self.layout_data
        return {data.index.id_at(s) for s in self._runs.slots(data)}

    @property
    def running_rows(self) -> list[str]:
        """The entries whose rows carry a running marker, top to bottom."""
        data = self.layout_data
        return [data.index.id_at(data.line_slot(at)) for at in sorted(self._runs.lines(data))]

    def _spin_once(self) -> None:
        self._spin = (self._spin + 1) % len(SPINNER)
        top = round(self.scroll_y)
        height = self.scrollable_content_region.height
        for at in self._runs.lines(self.layout_data):
            if top <= at < top + height:  # (a row off screen is drawn with the frame of its time)
                self.refresh_line(at)

    # ------------------------------------------------------------ internal state

    def _top_id(self) -> str | None:
        return self._id_at_line(round(self.scroll_y))

    def _after_change(self, keep_id: str | None, top_id: str | None, center: bool = False) -> None:
        """Re-find the cursor's entry after a rebuild so nothing appears to move."""
        data = self.layout_data
        at = data.index_of(data.shown_ancestor(keep_id if keep_id is not None else self._remembered))
        self.cursor = at if at is not None else min(self.cursor, max(len(data) - 1, 0))
        self._remembered = self.cursor_id or keep_id or self._remembered
        self._footer_follows()
        self._sync_size()
        top = data.index_of(top_id)
        if top is not None:
            self._scroll_y_to(top)
        else:
            self._scroll_cursor_visible(center)

    def _scroll_y_to(self, y: float) -> None:
        # force: the scrollbars learn of a new virtual size only at the next layout, and a
        # scroll asked for before that would be dropped (a big session opened at its top)
        self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def _sync_size(self) -> None:
        # only the height: lines are drawn to the panel's width (never scrolled sideways), and a
        # new virtual size is a layout of the whole screen, once more after every resize
        if self.virtual_size.height != len(self.layout_data) or self.virtual_size.width:
            self.virtual_size = Size(0, len(self.layout_data))
        self._update_subtitle()
        self.refresh()

    def _update_subtitle(self) -> None:
        data = self.layout_data
        typed = self._query_typing.text
        if query_words(typed) or self._query_typing.active:
            typing = "▏" if self._query_typing.active else ""
            count = len(data.matches)
            found = f"{count} match{'es' if count != 1 else ''}" if data.query.strip() else "type to filter"
            self.border_subtitle = f"{data.mode} /{typed}{typing} · {found}"
        elif self.reading:
            self.border_subtitle = f"{data.mode} · the branch; reading {self.reading:,} entries…"
        else:
            self.border_subtitle = f"{data.mode} · {len(data)}/{data.total}"

    def _set_cursor(self, index: int, center: bool = False) -> None:
        count = len(self.layout_data)
        if not count:
            self.cursor = 0
            return
        old = self.cursor
        self.cursor = max(0, min(index, count - 1))
        self.refresh_line(old)
        self.refresh_line(self.cursor)
        self._scroll_cursor_visible(center)
        self._footer_follows()

    _on_subagent = False

    def _footer_follows(self) -> None:
        """The footer shows `o Open sub-agent` while the cursor is on such a row (its bindings asked
        again only when that changes: not on every key)."""
        if self.on_subagent != self._on_subagent:
            self._on_subagent = not self._on_subagent
            self.refresh_bindings()

    def _scroll_cursor_visible(self, center: bool = False) -> None:
        """Bring the cursor into view: scrolled by the least, or centred when ``center`` and the
        cursor is off screen (a jump: the rows around it matter)."""
        height = self.scrollable_content_region.height or 1
        top = round(self.scroll_y)
        if top <= self.cursor < top + height:
            return
        if center:
            self._scroll_y_to(max(self.cursor - height // 2, 0))
        elif self.cursor < top:
            self._scroll_y_to(self.cursor)
        else:
            self._scroll_y_to(self.cursor - height + 1)

    def size_told(self, size: Size) -> None:
        # the layout at a new size: the cursor is scrolled into view here, so the first frame at
        # the new size draws it (from on_resize it came a frame later)
        self._scroll_cursor_visible(center=True)

    def on_resize(self) -> None:
        self._sync_size()
        # rows handed in before the panel had a size (or while it was hidden) could not be
        # scrolled to; any resize keeps the cursor in view
        self._scroll_cursor_visible(center=True)

    def on_focus(self) -> None:
        self.refresh_line(self.cursor)

    def on_blur(self) -> None:
        self.refresh_line(self.cursor)

    # ------------------------------------------------------------ drawing

    def render_lines(self, crop: Region) -> list[Strip]:
        # what every line of a frame shares, found once (rich_style walks the ancestors: it was
        # a third of a line's drawing)
        self._frame = (self.rich_style, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        base, width = self._frame or (self.rich_style, self.scrollable_content_region.width)
        return self._drawing.line(self.layout_data, round(self.scroll_y) + y, width, base, cursor=self.cursor,
                                  leaf_id=self.leaf_id, active=self._active, focused=self.has_focus,
                                  style=self._component, running=self._runs.slots(self.layout_data),
                                  spinner=SPINNER[self._spin])

    def _component(self, name: str) -> Style:
        return self.get_component_rich_style(f"tree-view--{name}")

    # ------------------------------------------------------------ keys and mouse

    def action_cursor_up(self) -> None:
        self._set_cursor(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_cursor(self.cursor + 1)

    def action_page_up(self) -> None:
        self._set_cursor(self.cursor - max(self.scrollable_content_region.height - 1, 1))

    def action_page_down(self) -> None:
        self._set_cursor(self.cursor + max(self.scrollable_content_region.height - 1, 1))

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        self._set_cursor(len(self.layout_data) - 1)

    def _post_for_cursor(self, message_type: type[messages.EntryMessage]) -> None:
        if self.cursor_id is not None:
            self.post_message(message_type(self.cursor_id))

    def action_choose(self) -> None:
        self._post_for_cursor(self.NodeChosen)

    def action_preview(self) -> None:
        self._post_for_cursor(self.PreviewRequested)

    def action_open_subagent(self) -> None:
        self._post_for_cursor(self.SubagentRequested)

    @property
    def on_subagent(self) -> bool:
        """The cursor is on a sub-agent's result (o opens its session; the footer says so)."""
        row = self.layout_data.rows.get(self.cursor_id) if self.cursor_id is not None else None
        return row is not None and is_subagent_row(row)

    def action_label(self) -> None:
        self._post_for_cursor(self.LabelRequested)

    def action_fork(self) -> None:
        self._post_for_cursor(self.ForkRequested)

    def action_back(self) -> None:
        self.post_message(self.BackRequested())

    def action_goto_leaf(self) -> None:
        self.move_cursor_to(self.leaf_id)

    def action_sibling(self, delta: int) -> None:
        current = self.cursor_id
        if current is None:
            return
        siblings = self.layout_data.siblings(current)
        if len(siblings) > 1:
            target = siblings[(siblings.index(current) + delta) % len(siblings)]
            self.move_cursor_to(target)

    def action_fork_point(self, delta: int) -> None:
        """``{`` / ``}``: the previous / next fork on the path through the cursor (nav.py)."""
        if delta < 0:
            at = fork_above(self.layout_data, self.cursor_id)
        else:
            at = fork_below(self.layout_data, self.cursor, self._active.slots)
        if at is not None:
            self._set_cursor(at, center=True)
        else:
            self.app.bell()

    def action_next_match(self, delta: int) -> None:
        at = next_match(self.layout_data, self.cursor, delta)
        if at is not None:
            self._set_cursor(at, center=True)

    def action_clear_filter(self) -> None:
        self._query_typing.stop()
        self.set_query("")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # n/N and Esc belong to the filter; without one, Esc goes on to the App (stop, preview)
        if action in ("next_match", "clear_filter"):
            return bool(self.layout_data.query.strip())
        if action == "open_subagent":
            return self.on_subagent
        return True

    def action_fold(self) -> None:
        """Fold the cursor's subtree; on a folded or childless row, go to the parent instead."""
        current = self.cursor_id
        if current is None:
            return
        data = self.layout_data
        if data.children_at(self.cursor) and not data.folded_at(self.cursor):
            self.layout_data.folded.add(current)
            self.layout_data.rebuild()
            self._after_change(current, top_id=self._top_id())
        else:
            self.move_cursor_to(self.layout_data.visible_parent(current))

    def action_unfold(self) -> None:
        current = self.cursor_id
        if current is not None and current in self.layout_data.folded:
            self.layout_data.folded.discard(current)
            self.layout_data.rebuild()
            self._after_change(current, top_id=self._top_id())

    def action_filter_mode(self, mode: str) -> None:
        self.set_filter(mode)

    def action_start_filter(self) -> None:
        self._query_typing.start()

    @property
    def takes_typing(self) -> bool:
        """While a filter is being typed, printable keys are the tree's (the App sends other
        typing to the composer)."""
        return self._query_typing.active

    async def on_key(self, event: events.Key) -> None:
        if self._query_typing.key(event):
            self.refresh_bindings()

    def action_resize(self, delta: int) -> None:
        self.post_message(self.ResizeRequested(None, final=True, delta=delta))

    # The left border is a handle: pressed there, the panel follows the pointer until released.
    _dragging = False

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if event.x == 0 and event.button == 1:  # (x counts from the outer edge: the border column)
            self._dragging = True
            self.capture_mouse()
            event.stop()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            self.post_message(self.ResizeRequested(self._dragged_width(event), final=True))
            event.stop()

    def _dragged_width(self, event: events.MouseEvent) -> int:
        return self.region.right - event.screen_x

    def on_click(self, event: events.Click) -> None:
        if event.x == 0:
            return  # the border: a handle, not a row
        index = self._line_at(event)
        entry_id = self._id_at_line(index) if index is not None else None
        if index is not None and entry_id is not None:
            self._set_cursor(index)
            self.post_message(self.NodeChosen(entry_id))

    def _line_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        index = round(self.scroll_y) + offset.y
        return index if 0 <= index < len(self.layout_data) else None

    # ------------------------------------------------------------ hover details

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self.post_message(self.ResizeRequested(self._dragged_width(event), final=False))
            return
        index = self._line_at(event)
        self._tips.hover(self._id_at_line(index) if index is not None else None)

    def on_leave(self, event: events.Leave) -> None:
        self._tips.hover(None)

    def _ask_details(self, entry_id: str) -> None:
        self.post_message(self.DetailsRequested(entry_id))
