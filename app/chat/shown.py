"""What the chat shows: the path (or a previewed branch), its marks and labels, the header and the
status, each computed from memory (the tree index and the path state) when a change is told."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from treechat.chat.core import ChatCore
from treechat.chat.events import (
    Header,
    HeaderChanged,
    Mark,
    PathChanged,
    Status,
)
from treechat.chat.status import build_status, first_prompt, sibling_marks, viewing_text
from treechat.shown_path import ShownPath, shown_path

if TYPE_CHECKING:
    pass


class ChatShown(ChatCore):

    async def preview(self, entry_id: str | None) -> None:
        """Show another branch in the transcript without moving the leaf (None: back to the leaf)."""
        self.preview_id = entry_id if entry_id != self.session.leaf_id else None
        self._emit(await self._path_changed("preview"))
        self._emit(HeaderChanged())

    async def _path_to_show(self) -> ShownPath:
        return await shown_path(self.session.storage, self.tree, self.preview_id or self.session.leaf_id)

    async def _path_changed(self, cause: Literal["move", "preview", "compaction"]) -> PathChanged:
        path = await self._path_to_show()
        marks, labels = self._path_marks(path)
        return PathChanged(path, self.session.leaf_id, self.preview_id, cause, marks, labels)

    def _path_marks(self, path: ShownPath) -> tuple[tuple[Mark, ...], tuple[tuple[str, str], ...]]:
        """The `‹ n/m ›` marks and labels of a path's newest entries, as they are now."""
        ids = [e.id for e in path]
        labels = self.tree.labels
        return tuple(sibling_marks(ids, self.tree)), tuple((i, text) for i in ids if (text := labels.get(i)))

    def _siblings(self, entry_id: str) -> tuple[int, int] | None:
        sibs = self.tree.siblings(entry_id)
        return (sibs.index(entry_id) + 1, len(sibs)) if len(sibs) > 1 and entry_id in sibs else None

    def header(self) -> Header:
        leaf = self.session.leaf_id
        depth = self._state.depth if self._state_leaf == leaf else len(self.tree.path_ids(leaf))
        branches = max(self.tree.branch_count(), 1 if len(self.tree) else 0) if self._tree_load is None else -1
        return Header(title=self.title(), depth=depth, branches=branches,
                      viewing=viewing_text(self.tree, self.preview_id))

    def title(self) -> str:
        """The session's name, else its first prompt, else its id."""
        if self._name:
            return self._name
        if self._first_prompt is None:
            self._first_prompt = first_prompt(self.tree, self.session.leaf_id)
        return self._first_prompt[:60] if self._first_prompt else f"new session {self.session_id[:8]}"

    def status(self) -> Status:
        return build_status(self._state, self._agent, self.current_model(), self.registry)
