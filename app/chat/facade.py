"""The controller: the one thing a front end talks to, and the one owner of a chat's state.

`Chat` holds the current `Session` (the tree and its leaf) and, once something needs a model,
its `AgentSession`. Front ends call its methods (send, steer, stop, move, fork, compact, …) and
subscribe to its typed events (`treechat.chat.events`); they never reach into the agent or the
storage themselves. It imports no Textual, so the TUI and print mode share every rule.

`ChatCore` (chat_core.py) keeps the state and its events, the sessions, the model, sending and
the queue; this class adds moving in the tree and the commands. Errors a person can act on are
`ChatError`s with one sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from treechat.agent.tools import make_tools
from treechat.chat.core import ChatError
from treechat.chat.events import Focused, HeaderChanged, Notice, StatusChanged, TreeLoaded
from treechat.chat.status import entry_words
from treechat.chat.workspace import ChatWorkspace
from treechat.export_target import OutputError
from treechat.exporting import export_session
from treechat.llm.local import shown_ref
from treechat.session.agent_session import CompactionError, CompactionResult
from treechat.session.branching import ForkError, NothingToSummarize, fork_session
from treechat.session.instructions import CUSTOM_TYPE as INSTRUCTIONS_TYPE
from treechat.storage.base import SearchHit, SessionSummary, StorageError
from treechat.storage.model import AssistantMessage, CompactionEntry, Entry, MessageEntry, message_text
from treechat.storage.tree_index import CONVERSATION_TYPES, TreeIndex

__all__ = ["Chat", "ChatError"]


class Chat(ChatWorkspace):
    # ------------------------------------------------------------ the model and the system prompt

    def system_prompt(self) -> str:
        """The system prompt the next request carries."""
        self.load_extensions()  # the skills it lists
        tools = self._agent.state.tools if self._agent is not None else [
            *make_tools(self.tool_names, cwd=self.cwd), *self.mcp.tools()]
        return self.prompt_builder.build(list(tools))

    async def set_instructions(self, text: str | None) -> str:
        """`/system TEXT`: the user's own instructions (None or "" removes them), kept with the
        session (an entry on the path: a restart and `context --json` see them); the new prompt."""
        instructions = (text or "").strip() or None
        try:
            await self.session.append_custom(INSTRUCTIONS_TYPE, {"text": instructions})
        except StorageError as err:
            raise ChatError(str(err)) from None
        self.prompt_builder.instructions = instructions
        if self._refresh_prompt is not None:
            return self._refresh_prompt()
        return self.system_prompt()

    async def set_model(self, ref: str) -> None:
        try:
            model = self.local.known(self.registry.resolve(ref))
        except ValueError as err:
            raise ChatError(str(err)) from None
        self.model_ref = ref
        if self._agent is None:
            await self.ensure_agent()
        else:
            await self._agent.set_model(model)
            self.local.probe(model)
        self._emit(StatusChanged())
        self._emit(self.readiness())

    async def set_thinking(self, level: str) -> str:
        """The level in use afterwards (clamped to what the model supports; a notice says so)."""
        agent = await self.ensure_agent()
        try:
            got = await agent.set_thinking_level(level)
        except ValueError as err:
            raise ChatError(str(err)) from None
        if got != level:
            self._emit(Notice(f"{agent.state.model.ref} supports thinking up to {got!r}."))
        self._emit(StatusChanged())
        return got

    # ------------------------------------------------------------ moving in the tree

    async def choose(self, entry_id: str) -> str | None:
        """The tree's Enter/click (DESIGN §6): a user message moves the leaf to its parent and its
        text comes back to edit and resend (a new sibling); anything else moves the leaf to it.
        While a reply runs, the branch is only previewed."""
        if self.is_running:
            await self.preview(entry_id)
            self._emit(Notice("The agent is still running: showing that branch only. Esc stops the run."))
            return None
        entry = await self.session.get_entry(entry_id)
        if entry is None:
            raise ChatError(f"Entry {entry_id} not found.")
        if isinstance(entry, MessageEntry) and entry.message.role == "user":
            await self.move_to(entry.parent_id)
            return message_text(entry.message)
        await self.move_to(entry_id)
        return None

    def _whole_tree_in(self, tree: TreeIndex) -> None:
        self._emit(TreeLoaded(tree, self.session.leaf_id))
        self._emit(HeaderChanged())

    async def entries(self, entry_ids: Sequence[str]) -> list[Entry]:
        """Entries of this session by id, in that order (a window of a long path, for the view)."""
        return await self.session.storage.get_entries_by_ids(entry_ids)

    async def move_to(self, target: str | None, *, remember: bool = True, announce: bool = True) -> None:
        """Move the leaf; leaving a branch is announced (with `/summarize` offered) unless the
        caller is about to grow an alternative there (retry). A read-only store cannot keep a
        move: the branch is shown instead."""
        await self.whole_tree()  # where the move goes is in the tree
        old = self.session.leaf_id
        if target != old and self.read_only:
            await self.preview(target)
            self._emit(Notice(f"Read-only ({self.read_only}): showing that branch; the leaf cannot move.",
                              "warning"))
            return
        if target != old:
            if self.is_running:
                raise ChatError("Stop the running reply (Esc) before moving in the tree.")
            if remember:
                self.leaf_history.append(old)
            if self._agent is not None:
                await self._agent.move_to(target)
            else:
                await self.session.move_to(target)
            await self._load_state()
            self._first_prompt = None  # another root may begin this path
            if announce and old is not None and old not in set(self.tree.path_ids(target)):
                self.abandoned_leaf = old
                self._emit(Notice(f"Left the branch at {entry_words(self.tree, old)}. /summarize adds a summary of it to the context; "
                                  "Backspace in the tree goes back."))
        self.preview_id = None
        self._emit(await self._path_changed("move"))
        self._emit(HeaderChanged())
        self._emit(StatusChanged())
        if announce and target != old:
            self.offer_restore()  # the files there, if they differ from the disk (never silently)

    async def back(self) -> None:
        if not self.leaf_history:
            raise ChatError("No earlier leaf position in this session.")
        await self.move_to(self.leaf_history.pop(), remember=False)

    async def switch_sibling(self, entry_id: str, delta: int) -> None:
        """`‹ n/m ›`: go to the newest tip under the previous/next alternative of `entry_id`."""
        await self.whole_tree()
        sibs = self.tree.siblings(entry_id)
        if len(sibs) < 2 or entry_id not in sibs:
            return
        target = sibs[(sibs.index(entry_id) + delta) % len(sibs)]
        await self.move_to(self.tree.newest_tip_under(target))

    def originals_of(self, compaction: CompactionEntry, full_path: list[Entry]) -> list[Entry]:
        stop = compaction.id if compaction.retained_tail else compaction.first_kept_entry_id
        out: list[Entry] = []
        for entry in full_path:
            if entry.id in (stop, compaction.id):
                break
            out.append(entry)
        return out

    async def compacted_away(self, compaction_id: str) -> list[Entry]:
        """The entries a compaction took out of the context (the card shows them, dimmed)."""
        entry = await self.session.get_entry(compaction_id)
        if not isinstance(entry, CompactionEntry):
            return []
        return self.originals_of(entry, await self.session.get_branch(entry.id))

    async def entry_details(self, entry_id: str) -> str | None:
        """What the tree's tooltip adds about an entry: the model and tokens of a reply, the
        tokens a compaction saved, the size of a prompt."""
        entry = await self.session.get_entry(entry_id)
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
        """A search hit: open its session and show its entry (on the active path as it is; on
        another branch, that branch previewed). Returns the entry to highlight."""
        if hit.session_id != self.session_id:
            await self.resume(hit.session_id)
        await self.whole_tree()
        row = self.tree.get(hit.entry_id)
        target = hit.entry_id
        if row is not None and row.type in ("label", "session_info") and row.parent_id:
            target = row.parent_id
        if target not in set(self.tree.path_ids(self.session.leaf_id)):
            await self.preview(target)
        self._emit(Focused(target))
        return target

    # ------------------------------------------------------------ names, labels, forks

    async def rename(self, name: str, session_id: str | None = None) -> None:
        """Name a session; the current one gets the entry at its leaf (never a fork)."""
        if session_id is None or session_id == self.session_id:
            await self.session.append_session_info(name)
        else:
            await self.catalog.rename(session_id, name)

    async def label(self, entry_id: str | None, text: str | None) -> None:
        """Label an entry (empty clears); `None` labels the newest conversation entry on the path
        (a message, a compaction, a summary): a `/label` typed right after `/name` or a model change
        would otherwise land on that setting's entry, which the tree does not show."""
        target = entry_id or self._newest_conversation_entry()
        if target is None:
            raise ChatError("Nothing to label yet: the session is empty.")
        try:
            await self.session.append_label(target, text or None)
        except StorageError as err:
            raise ChatError(str(err)) from None

    def _newest_conversation_entry(self) -> str | None:
        at = self.session.leaf_id
        while at is not None:
            row = self.tree.get(at)
            if row is None or row.type in CONVERSATION_TYPES:
                return at
            at = row.parent_id
        return self.session.leaf_id  # only settings so far: the leaf is all there is

    def label_of(self, entry_id: str) -> str | None:
        row = self.tree.get(entry_id)
        return row.label if row is not None else None

    async def fork(self, entry_id: str | None, position: Literal["auto", "at", "before"] = "auto",
                   *, composer_text: str | None = None) -> str:
        """A new session holding the path to `entry_id` (default: the leaf), which becomes the
        current one. "before" a user message (or "auto" on one) forks at its parent and its text
        comes back in the composer. The original session is not changed. Returns the new id."""
        original = self.session_id
        if entry_id is None:
            if position == "before":
                path = await self.session.get_branch()
                prompt = next((e for e in reversed(path) if isinstance(e, MessageEntry)
                               and e.message.role == "user"), None)
                if prompt is None:
                    raise ChatError("No prompt on this branch to fork before.")
                entry_id = prompt.id
            else:
                entry_id = self.session.leaf_id
        if entry_id is None:
            raise ChatError("Nothing to fork yet: the session is empty.")
        if position == "auto":
            row = self.tree.get(entry_id)
            position = "before" if row is not None and row.role == "user" else "at"
        try:
            storage, text = await fork_session(self.catalog, self.session, entry_id, position)
        except (ForkError, StorageError) as err:
            raise ChatError(str(err)) from None
        await self.open(storage, composer_text=composer_text, editor_text=text)
        self.offer_restore()  # the fork's point may hold other files than the disk
        # (ids made in the same minute share their first characters: show enough to tell them apart)
        n = next((i + 1 for i, (a, b) in enumerate(zip(storage.session_id, original)) if a != b), 8)
        n = max(8, min(n, len(original)))
        self._emit(Notice(f"Forked into a new session {storage.session_id[:n]}; Ctrl+R goes back to {original[:n]}."))
        return storage.session_id

    async def delete_session(self, session_id: str) -> None:
        if session_id == self.session_id:
            await self.new_session()
        await self.catalog.delete(session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        """Every session with something in it (and the current one), newest first."""
        return [r for r in await self.catalog.list() if r.entry_count > 0 or r.id == self.session_id]

    # ------------------------------------------------------------ read-only stores

    @property
    def read_only(self) -> str | None:
        """Why this store cannot be written (browsing and search still work), or None."""
        reason = getattr(self.catalog, "read_only", None)
        return reason if isinstance(reason, str) and reason else None

    # ------------------------------------------------------------ copy and retry

    async def copy_text(self, n: int | None = None) -> str:
        """What `/copy` copies: the last reply (None), or the N-th message from the end of the
        path (1 = the last). The text as a person would paste it: a reply without its thinking."""
        path = await self._path_to_show()
        if path.slots is None:
            ids = [e.id for e in path if isinstance(e, MessageEntry)]
        else:
            ids = [i for i, s in zip(path.ids, path.slots) if self.tree.type_at(s) == "message"]
        entries = list(path)
        if n is None:
            for part in (entries, None):  # the newest entries first; the whole branch only if need be
                got = part if part is not None else await self.entries(ids)
                replies = [e.message for e in got if isinstance(e, MessageEntry)
                           and isinstance(e.message, AssistantMessage) and message_text(e.message).strip()]
                if replies:
                    return message_text(replies[-1])
            raise ChatError("No reply to copy yet.")
        if n < 1 or n > len(ids):
            raise ChatError(f"There are {len(ids)} messages on this branch; /copy N takes 1 to {len(ids)}.")
        found = await self.entries([ids[-n]])
        if not found or not isinstance(found[0], MessageEntry):
            raise ChatError("That message could not be read.")
        return message_text(found[0].message)

    async def retry(self, reply_id: str | None = None) -> None:
        """Ask again: the prompt a reply answered (default: the last prompt) gets a new reply, a
        sibling of the old one (`‹ n/m ›` switches between them); nothing is deleted."""
        if self.is_running:
            raise ChatError("A reply is still running: Esc stops it, then retry.")
        path = await self.session.get_branch(reply_id) if reply_id else await self.session.get_branch()
        prompt = next((e for e in reversed(path) if isinstance(e, MessageEntry) and e.message.role == "user"), None)
        if prompt is None:
            raise ChatError("No prompt on this branch to ask again.")
        agent = await self.ensure_agent()
        if prompt.id != self.session.leaf_id:
            await self.move_to(prompt.id, announce=False)  # the old reply becomes an alternative
        self._start_continue(agent)

    # ------------------------------------------------------------ summaries

    async def compact(self, instructions: str | None = None) -> CompactionResult | None:
        """`/compact`: summarise the older part of the path. The outcome arrives as events
        (CompactionStarted/Ended, PathChanged); None when nothing was compacted (the event says why)."""
        agent = await self.ensure_agent()
        try:
            return await agent.compact(instructions or None)
        except CompactionError:
            return None  # CompactionEnded(error=…) was emitted already

    async def summarize(self, instructions: str | None = None) -> None:
        """Add a summary of the branch the leaf left to the context (after a move)."""
        if not self.abandoned_leaf:
            raise ChatError("No branch to summarize: move the leaf to another branch first (tree: Enter).")
        agent = await self.ensure_agent()
        leaf, self.abandoned_leaf = self.abandoned_leaf, None
        try:
            await agent.summarize_branch(leaf, instructions or None)
        except NothingToSummarize as err:
            raise ChatError(str(err) or "Nothing to summarize on that branch.") from None
        except (RuntimeError, ValueError, StorageError) as err:
            self.abandoned_leaf = leaf
            raise ChatError(str(err)) from None
        self._emit(Notice("Added a summary of the branch you left."))
        self._emit(StatusChanged())

    # ------------------------------------------------------------ export and info

    async def export(self, path: str | Path | None = None) -> Path:
        """Write this session to `path` (.jsonl opens in Pi, .md for reading, .html to look at);
        default: `<home>/exports/<id>.jsonl`."""
        target = Path(path).expanduser() if path else Path(self.settings.home) / "exports" / f"{self.session_id}.jsonl"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            await export_session(self.session, target)
        except OutputError as err:  # already a sentence naming the target
            raise ChatError(f"Could not export: {err.strerror}") from None
        except OSError as err:
            raise ChatError(f"Could not export to {target}: {err.strerror or err}") from None
        return target

    async def info(self) -> str:
        storage = self.session.storage
        stats = await storage.get_session_stats()
        meta = await storage.get_metadata()
        where = f" · {meta.path}" if meta.path else ""
        return (f"Session {self.session_id}{where}\n{stats.entry_count} entries · {stats.message_count} messages · "
                f"{stats.total_tokens:,} tokens · ${stats.cost_total:.4f} (all branches)")

