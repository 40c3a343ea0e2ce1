"""TreeView: the session tree panel, drawn line by line (Textual Line API).

Data in (from the App):
    ``set_index(index, leaf_id, active_path_ids)`` the whole tree: the controller's ``TreeIndex``
                                                   (read only); rebuilds the lines in O(n)
    ``set_rows(rows, leaf_id, active_path_ids)``   the same from bare rows (an index is built)
    ``add_row(row)``                               a row the index gained while the agent runs; the
                                                   cursor stays on its entry, the view does not jump
    ``replace_row(row)``                           the index replaced a row (a new label)
    ``set_leaf(leaf_id, active_path_ids)``         the leaf moved; redraws markers only (if the
                                                   cursor was on the old leaf it follows)
    ``set_filter(mode)`` / ``filter_mode``          "default" | "no-tools" | "user-only" | "labeled" | "all"
    ``set_query(text)``                            type-to-filter (also typed after ``/``)
    ``move_cursor_to(entry_id)``                   e.g. a search hit
    ``cursor_id``                                  the entry under the cursor (read)

Messages out: ``NodeChosen(entry_id)`` (Enter, click), ``PreviewRequested(entry_id)`` (Space),
``LabelRequested(entry_id)`` (L), ``ForkRequested(entry_id)`` (f), ``BackRequested()`` (Backspace).
Keys are in ``widgets.keymap`` (context "tree"); they act only while the tree has focus.
"""

from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from treechat.storage.base import TreeRow
from treechat.storage.tree_index import TreeIndex, TreeSnapshot

from .keymap import bindings_for
from .tree_layout import TreeLayout
from .tree_rows import CHILDREN, CONNECTOR, FILTERS, FOLDED, GUTTER, ROW, gutter_prefix, row_kind

_MAX_LEVELS = 12  # deeper fork nesting is drawn as "⋯" so the text stays on screen
_ROLE_TAG = {"user": "user: ", "assistant": "asst: ", "tool": "tool: ", "summary": "", "settings": ""}


class TreeView(ScrollView, can_focus=True):
    BINDINGS = bindings_for("tree")

    COMPONENT_CLASSES = {
        "tree-view--cursor",
        "tree-view--connector",
        "tree-view--active",
        "tree-view--leaf",
        "tree-view--label",
        "tree-view--user",
        "tree-view--assistant",
        "tree-view--tool",
        "tree-view--summary",
        "tree-view--settings",
        "tree-view--other",
        "tree-view--fold",
    }

    DEFAULT_CSS = """
    TreeView { overflow-x: hidden; }
    TreeView > .tree-view--cursor { background: $boost; text-style: bold; }
    TreeView:focus > .tree-view--cursor { background: $accent 40%; }
    TreeView > .tree-view--connector { color: $text-muted; }
    TreeView > .tree-view--active { color: $success; text-style: bold; }
    TreeView > .tree-view--leaf { color: $warning; text-style: bold; }
    TreeView > .tree-view--label { color: $secondary; }
    TreeView > .tree-view--user { color: $primary-lighten-2; }
    TreeView > .tree-view--assistant { color: $text; }
    TreeView > .tree-view--tool { color: $text-muted; }
    TreeView > .tree-view--summary { color: $warning-lighten-1; text-style: italic; }
    TreeView > .tree-view--settings { color: $text-disabled; }
    TreeView > .tree-view--other { color: $text-muted; }
    TreeView > .tree-view--fold { color: $accent; }
    """

    filter_mode: reactive[str] = reactive("default", init=False)

    class EntryMessage(Message):
        """Base of the messages about one entry (handle each subclass by its own name)."""

        def __init__(self, entry_id: str) -> None:
            self.entry_id = entry_id
            super().__init__()

    class NodeChosen(EntryMessage):
        """Move the leaf here (Enter or click). The App applies DESIGN §6 semantics."""

    class PreviewRequested(EntryMessage):
        """Show this path in the transcript without moving the leaf (Space)."""

    class LabelRequested(EntryMessage):
        """Edit the label of this entry (L)."""

    class ForkRequested(EntryMessage):
        """Fork a new session at this entry (f)."""

    class BackRequested(Message):
        """Go back to the previous leaf position (Backspace)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.layout_data = TreeLayout()
        self._index: TreeSnapshot | None = None
        self.leaf_id: str | None = None
        self.active_ids: frozenset[str] | set[str] = frozenset()
        self.cursor = 0
        self._typing = False  # "/" was pressed: printable keys edit the query
        self._sized = False
        self.border_title = "tree"

    # ------------------------------------------------------------ data in

    @property
    def lines(self) -> list:
        return self.layout_data.lines

    @property
    def cursor_id(self) -> str | None:
        lines = self.lines
        return lines[self.cursor][ROW].id if 0 <= self.cursor < len(lines) else None

    def set_index(self, index: TreeSnapshot, leaf_id: str | None, active_path_ids: set[str]) -> None:
        """A whole (new) tree: the controller's index, read, never changed here. The cursor
        starts on the leaf, scrolled into view."""
        keep = self.cursor_id if index is self._index else None
        self._index = index
        self.leaf_id, self.active_ids = leaf_id, set(active_path_ids)
        self.layout_data.set_index(index)
        retired, self.layout_data.retired = self.layout_data.retired, []
        self.call_after_refresh(retired.clear)  # free the previous tree after the first frame
        if keep is None or self.layout_data.index_of(keep) is None:
            keep = leaf_id
        self._after_change(keep, top_id=None, center=True)

    def set_rows(self, rows: list[TreeRow], leaf_id: str | None, active_path_ids: set[str]) -> None:
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
                self.scroll_to(y=self.scroll_y + 1, animate=False, immediate=True)
            self._sync_size()
        else:
            self._after_change(keep, top_id=top)

    def replace_row(self, row: TreeRow) -> None:
        """The index replaced a row (its label changed)."""
        at = self.layout_data.replace_row(row)
        if at is not None:
            self.refresh_lines_at(at)

    def set_leaf(self, leaf_id: str | None, active_path_ids: set[str]) -> None:
        follow = self.cursor_id is not None and self.cursor_id == self.layout_data.shown_ancestor(self.leaf_id)
        self.leaf_id, self.active_ids = leaf_id, set(active_path_ids)
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
        keep = self.cursor_id
        self.layout_data.query = text
        self.layout_data.rebuild()
        self._after_change(keep, top_id=None, center=True)

    def move_cursor_to(self, entry_id: str | None) -> None:
        if entry_id is not None and self.layout_data.unfold_to(entry_id):
            self.layout_data.rebuild()
            self._sync_size()
        shown = self.layout_data.shown_ancestor(entry_id)
        at = self.layout_data.index_of(shown)
        if at is not None:
            self._set_cursor(at)

    # ------------------------------------------------------------ internal state

    def _top_id(self) -> str | None:
        lines, top = self.lines, round(self.scroll_y)
        return lines[top][ROW].id if 0 <= top < len(lines) else None

    def _after_change(self, keep_id: str | None, top_id: str | None, center: bool = False) -> None:
        """Re-find the cursor's entry after a rebuild so nothing appears to move."""
        data = self.layout_data
        at = data.index_of(data.shown_ancestor(keep_id))
        self.cursor = at if at is not None else min(self.cursor, max(len(self.lines) - 1, 0))
        self._sync_size()
        top = data.index_of(top_id)
        # the new virtual size reaches the scrollbars only after a refresh; scroll after it
        if top is not None:
            self.call_after_refresh(self.scroll_to, y=top, animate=False, immediate=True)
        else:
            self.call_after_refresh(self._scroll_cursor_visible, center)

    def _sync_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.lines))
        self._update_subtitle()
        self.refresh()

    def _update_subtitle(self) -> None:
        data = self.layout_data
        shown = len(data.lines)
        total = sum(1 for r in data.rows.values() if r.type != "leaf") if len(data.rows) < 5000 else len(data.rows)
        query = f" /{data.query}" + ("▏" if self._typing else "") if (data.query or self._typing) else ""
        self.border_subtitle = f"{data.mode}{query} · {shown}/{total}"

    def _set_cursor(self, index: int) -> None:
        if not self.lines:
            self.cursor = 0
            return
        old = self.cursor
        self.cursor = max(0, min(index, len(self.lines) - 1))
        self.refresh_lines_at(old, self.cursor)
        self._scroll_cursor_visible()

    def refresh_lines_at(self, *indexes: int) -> None:
        top = round(self.scroll_y)
        for index in indexes:
            self.refresh_line(index - top)

    def _scroll_cursor_visible(self, center: bool = False) -> None:
        height = self.scrollable_content_region.height or 1
        top = round(self.scroll_y)
        if center and not (top <= self.cursor < top + height):
            self.scroll_to(y=max(self.cursor - height // 2, 0), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._sync_size()
        if not self._sized and self.size.height > 0:
            # Rows handed in before the panel had a height could not be scrolled to; the
            # first real size is when the leaf can be brought into view.
            self._sized = True
            self.call_after_refresh(self._scroll_cursor_visible, True)

    # ------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_y) + y
        width = self.scrollable_content_region.width
        lines = self.lines
        if not 0 <= index < len(lines):
            return Strip.blank(width, self.rich_style)
        line = lines[index]
        row: TreeRow = line[ROW]
        style = self.get_component_rich_style
        base = self.rich_style
        if index == self.cursor:
            base = base + style("tree-view--cursor")
        kind = row_kind(row)
        segments = [Segment(gutter_prefix(line[GUTTER], line[CONNECTOR], _MAX_LEVELS), base + style("tree-view--connector"))]
        if row.id in self.active_ids:
            segments.append(Segment("• ", base + style("tree-view--active")))
        else:
            segments.append(Segment("  ", base))
        if line[FOLDED]:
            segments.append(Segment(f"⊞{line[CHILDREN]} ", base + style("tree-view--fold")))
        text = _ROLE_TAG.get(kind, "") + (self.layout_data.preview(row) or f"({row.type})")
        segments.append(Segment(text, base + style(f"tree-view--{kind}")))
        if row.label:
            segments.append(Segment(f" [{self.layout_data.preview_label(row)}]", base + style("tree-view--label")))
        if row.id == self.layout_data.shown_ancestor(self.leaf_id):
            segments.append(Segment(" ◀ leaf", base + style("tree-view--leaf")))
        return Strip(segments).crop_extend(0, width, base)

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
        self._set_cursor(len(self.lines) - 1)

    def _post_for_cursor(self, message_type: type[EntryMessage]) -> None:
        if self.cursor_id is not None:
            self.post_message(message_type(self.cursor_id))

    def action_choose(self) -> None:
        self._post_for_cursor(self.NodeChosen)

    def action_preview(self) -> None:
        self._post_for_cursor(self.PreviewRequested)

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

    def action_fold(self) -> None:
        """Fold the cursor's subtree; on a folded or childless row, go to the parent instead."""
        current = self.cursor_id
        if current is None:
            return
        line = self.lines[self.cursor]
        if line[CHILDREN] and not line[FOLDED]:
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
        self._typing = True
        self._update_subtitle()

    async def on_key(self, event: events.Key) -> None:
        if not self._typing:
            return
        # while typing a filter, keys edit the query instead of running tree bindings
        event.stop()
        event.prevent_default()
        query = self.layout_data.query
        if event.key == "escape":
            self._typing = False
            self.set_query("")
        elif event.key == "enter":
            self._typing = False
            self._update_subtitle()
        elif event.key == "backspace":
            self.set_query(query[:-1])
        elif event.is_printable and event.character:
            self.set_query(query + event.character)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = round(self.scroll_y) + offset.y
        if 0 <= index < len(self.lines):
            self._set_cursor(index)
            self.post_message(self.NodeChosen(self.lines[index][ROW].id))
