"""What the chat shows: the path (or a previewed branch), its marks and labels, the header and the
status, each computed from memory (the tree index and the path state) when a change is told."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from treechat.chat.events import Header, HeaderChanged, Mark, PathChanged, ReplyPending, ReplyStreaming, Status
from treechat.chat.status import (
    build_status,
    first_prompt,
    opening_prompt,
    sibling_marks,
    viewing_text,
    with_children,
)
from treechat.chat.tool_set import Named, builtin_named
from treechat.shown_path import ShownPath, shown_path
from treechat.storage.model import AssistantMessage

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.state import ChatState


class Shown:
    def __init__(self, s: ChatState, *, model_choice: ModelChoice, extras: Extras) -> None:
        self.s = s
        self.model_choice = model_choice
        self.extras = extras

    async def preview(self, entry_id: str | None) -> None:
        """Show another branch in the transcript without moving the leaf (None: back to the leaf)."""
        self.s.preview_id = entry_id if entry_id != self.s.session.leaf_id else None
        self.s.emit(await self.path_changed("preview"))
        self.s.emit(HeaderChanged())
        self.reply_on_screen()

    def reply_on_screen(self) -> None:
        """After the path shown changed: a run going at its tip has its reply shown as far as it came
        (or its request as pending), since the view let go of what streamed on another branch."""
        shown = self.s.preview_id or self.s.session.leaf_id
        run = next((r for r in self.s.runs.values() if r.tip == shown), None)
        if run is None or not run.agent.is_streaming:
            return
        partial = run.agent.state.streaming_message
        if isinstance(partial, AssistantMessage):
            self.s.emit(ReplyStreaming(partial, started=True, run=run.id, on_screen=True))
        elif not run.agent.state.pending_tool_calls:
            self.s.emit(ReplyPending(run=run.id, on_screen=True))

    async def path_to_show(self) -> ShownPath:
        return await shown_path(self.s.session.storage, self.s.tree, self.s.preview_id or self.s.session.leaf_id)

    async def path_changed(self, cause: Literal["move", "preview", "compaction"]) -> PathChanged:
        path = await self.path_to_show()
        marks, labels = self.path_marks(path)
        return PathChanged(path, self.s.session.leaf_id, self.s.preview_id, cause, marks, labels)

    def path_marks(self, path: ShownPath) -> tuple[tuple[Mark, ...], tuple[tuple[str, str], ...]]:
        """The `‹ n/m ›` marks and labels of a path's newest entries, as they are now."""
        ids = [e.id for e in path]
        labels = self.s.tree.labels
        return tuple(sibling_marks(ids, self.s.tree)), tuple((i, text) for i in ids if (text := labels.get(i)))

    def siblings(self, entry_id: str) -> tuple[int, int] | None:
        sibs = self.s.tree.siblings(entry_id)
        return (sibs.index(entry_id) + 1, len(sibs)) if len(sibs) > 1 and entry_id in sibs else None

    def header(self) -> Header:
        leaf = self.s.session.leaf_id
        depth = self.s.path_state.depth if self.s.state_leaf == leaf else len(self.s.tree.path_ids(leaf))
        branches = max(self.s.tree.branch_count(), 1 if len(self.s.tree) else 0) if self.s.tree_load is None else -1
        title, at_start = self._title()
        return Header(title=title, depth=depth, branches=branches,
                      viewing=viewing_text(self.s.tree, self.s.preview_id), at_start=at_start,
                      running_here=self.s.runs_told()[1], runs=len(self.s.runs_told()[0]),
                      sub_agent_of=self.s.sub_agent_of)

    def title(self) -> str:
        return self._title()[0]

    def _title(self) -> tuple[str, bool]:
        """The title, and whether the leaf is before every prompt of a session that has some (a
        rewind to the root: the session is still named by its first prompt)."""
        if self.s.first_prompt is None:
            self.s.first_prompt = first_prompt(self.s.tree, self.s.session.leaf_id)
        opening = None if self.s.first_prompt else opening_prompt(self.s.tree)
        if self.s.name:
            return self.s.name, opening is not None
        said = self.s.first_prompt or opening
        return (said[:60] if said else f"new session {self.s.session.session_id[:8]}"), opening is not None

    def status(self) -> Status:
        return build_status(with_children(self.s.path_state, self.s.live_children.values()), self.s.agent,
                            self.model_choice.current_model(), self.s.registry, self.tool_names(),
                            runs=len(self.s.runs_told()[0]))

    def tool_names(self) -> list[str]:
        """The tools the next request carries: the agent's, or (before there is one) the set it
        would start with on this path (chat/tool_set.py)."""
        if self.s.agent is not None:
            return [t.name for t in self.s.agent.state.tools]
        named = [*builtin_named(), *(Named(t.name, kept_on_every_path=True) for t in self.extras.mcp.tools())]
        return [t.name for t in self.s.tool_choice.offered(named, self.s.path_state.active_tool_names)]
