"""Moving in the tree: choose, move the leaf (remembered for back), switch siblings, jump to a
search hit, and the entries the view reads by id (a window of a long path, a compaction's originals)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from treechat.chat.errors import ChatError
from treechat.chat.events import Focused, HeaderChanged, Notice, StatusChanged
from treechat.chat.status import entry_words
from treechat.llm.local import shown_ref
from treechat.storage.base import SearchHit
from treechat.storage.model import AssistantMessage, CompactionEntry, Entry, MessageEntry, message_text
from treechat.text.expanded import as_typed

if TYPE_CHECKING:
    from treechat.chat.observe import Observer
    from treechat.chat.session_switch import SessionSwitch
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.tree import ChatTree
    from treechat.chat.workspace import Workspace


class Navigation:
    def __init__(self, s: ChatState, *, observer: Observer, session_switch: SessionSwitch, shown: Shown, trees: ChatTree,
                 workspace: Workspace) -> None:
        self.s = s
        self.observer = observer
        self.session_switch = session_switch
        self.shown = shown
        self.trees = trees
        self.workspace = workspace

    async def choose(self, entry_id: str) -> str | None:
        entry = await self.s.session.get_entry(entry_id)
        if entry is None:
            raise ChatError(f"Entry {entry_id} not found.")
        if any(r.tip == entry_id for r in self.s.runs.values()):
            await self.move_to(entry_id)  # a run's tip (its prompt, while the reply comes): join it at its live end
            return None
        if isinstance(entry, MessageEntry) and entry.message.role == "user":
            await self.move_to(entry.parent_id)
            return as_typed(entry.message) or message_text(entry.message)  # a skill's: `/skill:NAME text`
        await self.move_to(entry_id)
        return None

    async def entries(self, entry_ids: Sequence[str]) -> list[Entry]:
        """Entries of this session by id, in that order (a window of a long path, for the view)."""
        return await self.s.session.storage.get_entries_by_ids(entry_ids)

    async def move_to(self, target: str | None, *, remember: bool = True, announce: bool = True) -> None:
        """Move the leaf; leaving a branch is announced (with `/summarize` offered) unless the
        caller is about to grow an alternative there (retry). A read-only store cannot keep a
        move: the branch is shown instead."""
        await self.trees.whole_tree()  # where the move goes is in the tree
        old = self.s.session.leaf_id
        if target != old and self.s.read_only:
            await self.shown.preview(target)
            self.s.emit(Notice(f"Read-only ({self.s.read_only}): showing that branch; the leaf cannot move.",
                              "warning"))
            return
        if target != old:
            # a real move, runs or not (issue 39): a run on the branch left goes on writing it
            left_running = self.s.run_here()
            if remember:
                self.s.leaf_history.append(old)
            resting = self.s.resting
            if resting is not None:
                await resting.agent.move_to(target)  # the agent at rest goes along (its transcript is the new path's)
            else:
                await self.s.session.move_to(target)
            await self.observer.load_state()
            self.s.first_prompt = None  # another root may begin this path
            if left_running is not None and announce and old is not None:
                self.s.emit(Notice(f"Left the branch at {entry_words(self.s.tree, old)} while its run goes on (the tree "
                                   "marks it); Backspace in the tree goes back."))
            elif announce and old is not None and old not in set(self.s.tree.path_ids(target)):
                self.s.abandoned_leaf = old
                self.s.emit(Notice(f"Left the branch at {entry_words(self.s.tree, old)}. /summarize adds a summary of it to the context; "
                                  "Backspace in the tree goes back."))
        self.s.preview_id = None
        self.s.emit(await self.shown.path_changed("move"))
        self.s.emit(HeaderChanged())
        self.s.emit(StatusChanged())
        self.s.emit(self.s.queue)  # the queue of the branch on screen's run, or none
        self.shown.reply_on_screen()
        if announce and target != old:
            self.workspace.offer_restore()  # the files there, if they differ from the disk (never silently)

    async def back(self) -> None:
        if not self.s.leaf_history:
            raise ChatError("No earlier leaf position in this session.")
        await self.move_to(self.s.leaf_history.pop(), remember=False)

    async def switch_sibling(self, entry_id: str, delta: int) -> None:
        await self.trees.whole_tree()
        sibs = self.s.tree.siblings(entry_id)
        if len(sibs) < 2 or entry_id not in sibs:
            return
        target = sibs[(sibs.index(entry_id) + delta) % len(sibs)]
        await self.move_to(self.s.tree.newest_tip_under(target))

    def originals_of(self, compaction: CompactionEntry, full_path: list[Entry]) -> list[Entry]:
        stop = compaction.id if compaction.retained_tail else compaction.first_kept_entry_id
        out: list[Entry] = []
        for entry in full_path:
            if entry.id in (stop, compaction.id):
                break
            out.append(entry)
        return out

    async def compacted_away(self, compaction_id: str) -> list[Entry]:
        entry = await self.s.session.get_entry(compaction_id)
        if not isinstance(entry, CompactionEntry):
            return []
        return self.originals_of(entry, await self.s.session.get_branch(entry.id))

    async def entry_details(self, entry_id: str) -> str | None:
        entry = await self.s.session.get_entry(entry_id)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            msg, u = entry.message, entry.message.usage
            cost = f" · ${u.cost.total:.4f}" if u.cost.total else ""
            return f"{shown_ref(msg.provider, msg.model)} · {u.input + u.cache_read:,} in / {u.output:,} out{cost}"
        if isinstance(entry, MessageEntry):
            return f"{len(message_text(entry.message)):,} characters"
        if isinstance(entry, CompactionEntry):
            after = f" → {entry.tokens_after:,}" if entry.tokens_after else ""
            return f"compacted {entry.tokens_before:,}{after} tokens"
        return None

    async def jump_to(self, hit: SearchHit) -> str:
        if hit.session_id != self.s.session.session_id:
            await self.session_switch.resume(hit.session_id)
        await self.trees.whole_tree()
        row = self.s.tree.get(hit.entry_id)
        target = hit.entry_id
        if row is not None and row.type in ("label", "session_info") and row.parent_id:
            target = row.parent_id
        if target not in set(self.s.tree.path_ids(self.s.session.leaf_id)):
            await self.shown.preview(target)
        self.s.emit(Focused(target))
        return target
