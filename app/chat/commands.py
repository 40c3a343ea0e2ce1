"""Session commands: name, label, fork, copy, retry, compact, summarize, export, info."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from treechat.chat.errors import ChatError
from treechat.chat.events import Notice, StatusChanged
from treechat.export.formats import export_session
from treechat.export.target import OutputError
from treechat.session.agent_session import CompactionError, CompactionResult
from treechat.session.branching import ForkError, NothingToSummarize, fork_session
from treechat.storage.base import StorageError
from treechat.storage.model import AssistantMessage, MessageEntry, message_text
from treechat.storage.tree.index import CONVERSATION_TYPES

if TYPE_CHECKING:
    from treechat.chat.navigation import Navigation
    from treechat.chat.runs import Runs
    from treechat.chat.session_switch import SessionSwitch
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.workspace import Workspace


class Commands:
    def __init__(self, s: ChatState, *, navigation: Navigation, runs: Runs, session_switch: SessionSwitch, shown: Shown,
                 workspace: Workspace) -> None:
        self.s = s
        self.navigation = navigation
        self.runs = runs
        self.session_switch = session_switch
        self.shown = shown
        self.workspace = workspace

    async def rename(self, name: str, session_id: str | None = None) -> None:
        if session_id is None or session_id == self.s.session.session_id:
            await self.s.session.append_session_info(name)
        else:
            await self.s.catalog.rename(session_id, name)

    async def label(self, entry_id: str | None, text: str | None) -> None:
        target = entry_id or self._newest_conversation_entry()
        if target is None:
            raise ChatError("Nothing to label yet: the session is empty.")
        try:
            await self.s.session.append_label(target, text or None)
        except StorageError as err:
            raise ChatError(str(err)) from None

    def _newest_conversation_entry(self) -> str | None:
        at = self.s.session.leaf_id
        while at is not None:
            row = self.s.tree.get(at)
            if row is None or row.type in CONVERSATION_TYPES:
                return at
            at = row.parent_id
        return self.s.session.leaf_id  # only settings so far: the leaf is all there is

    def label_of(self, entry_id: str) -> str | None:
        row = self.s.tree.get(entry_id)
        return row.label if row is not None else None

    async def fork(self, entry_id: str | None, position: Literal["auto", "at", "before"] = "auto",
                   *, composer_text: str | None = None) -> str:
        original = self.s.session.session_id
        if entry_id is None:
            if position == "before":
                path = await self.s.session.get_branch()
                prompt = next((e for e in reversed(path) if isinstance(e, MessageEntry)
                               and e.message.role == "user"), None)
                if prompt is None:
                    raise ChatError("No prompt on this branch to fork before.")
                entry_id = prompt.id
            else:
                entry_id = self.s.session.leaf_id
        if entry_id is None:
            raise ChatError("Nothing to fork yet: the session is empty.")
        if position == "auto":
            row = self.s.tree.get(entry_id)
            position = "before" if row is not None and row.role == "user" else "at"
        try:
            storage, text = await fork_session(self.s.catalog, self.s.session, entry_id, position)
        except (ForkError, StorageError) as err:
            raise ChatError(str(err)) from None
        await self.session_switch.open(storage, composer_text=composer_text, editor_text=text)
        self.workspace.offer_restore()  # the fork's point may hold other files than the disk
        # (ids made in the same minute share their first characters: show enough to tell them apart)
        n = next((i + 1 for i, (a, b) in enumerate(zip(storage.session_id, original)) if a != b), 8)
        n = max(8, min(n, len(original)))
        self.s.emit(Notice(f"Forked into a new session {storage.session_id[:n]}; Ctrl+R goes back to {original[:n]}."))
        return storage.session_id

    async def copy_text(self, n: int | None = None) -> str:
        path = await self.shown.path_to_show()
        if path.slots is None:
            ids = [e.id for e in path if isinstance(e, MessageEntry)]
        else:
            ids = [i for i, s in zip(path.ids, path.slots) if self.s.tree.type_at(s) == "message"]
        entries = list(path)
        if n is None:
            for part in (entries, None):  # the newest entries first; the whole branch only if need be
                got = part if part is not None else await self.navigation.entries(ids)
                replies = [e.message for e in got if isinstance(e, MessageEntry)
                           and isinstance(e.message, AssistantMessage) and message_text(e.message).strip()]
                if replies:
                    return message_text(replies[-1])
            raise ChatError("No reply to copy yet.")
        if n < 1 or n > len(ids):
            raise ChatError(f"There are {len(ids)} messages on this branch; /copy N takes 1 to {len(ids)}.")
        found = await self.navigation.entries([ids[-n]])
        if not found or not isinstance(found[0], MessageEntry):
            raise ChatError("That message could not be read.")
        return message_text(found[0].message)

    async def retry(self, reply_id: str | None = None) -> None:
        if self.s.is_running_here:
            raise ChatError("A reply is still running on this branch: Esc stops it, then retry.")
        self.runs.check_room()
        path = await self.s.session.get_branch(reply_id) if reply_id else await self.s.session.get_branch()
        prompt = next((e for e in reversed(path) if isinstance(e, MessageEntry) and e.message.role == "user"), None)
        if prompt is None:
            raise ChatError("No prompt on this branch to ask again.")
        agent = await self.runs.ensure_agent()
        if prompt.id != self.s.session.leaf_id:
            await self.navigation.move_to(prompt.id, announce=False)  # the old reply becomes an alternative
        self.runs.start_continue(agent)

    async def compact(self, instructions: str | None = None) -> CompactionResult | None:
        agent = await self.runs.ensure_agent()
        try:
            return await agent.compact(instructions or None)
        except CompactionError:
            return None  # CompactionEnded(error=…) was emitted already

    async def summarize(self, instructions: str | None = None) -> None:
        if not self.s.abandoned_leaf:
            raise ChatError("No branch to summarize: move the leaf to another branch first (tree: Enter).")
        agent = await self.runs.ensure_agent()
        leaf, self.s.abandoned_leaf = self.s.abandoned_leaf, None
        try:
            await agent.summarize_branch(leaf, instructions or None)
        except NothingToSummarize as err:
            raise ChatError(str(err) or "Nothing to summarize on that branch.") from None
        except (RuntimeError, ValueError, StorageError) as err:
            self.s.abandoned_leaf = leaf
            raise ChatError(str(err)) from None
        self.s.emit(Notice("Added a summary of the branch you left."))
        self.s.emit(StatusChanged())

    async def export(self, path: str | Path | None = None) -> Path:
        default = Path(self.s.settings.home) / "exports" / f"{self.s.session.session_id}.jsonl"
        target = Path(path).expanduser() if path else default  # noqa: ASYNC240  $HOME, no I/O
        try:
            await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
            await export_session(self.s.session, target)
        except OutputError as err:  # already a sentence naming the target
            raise ChatError(f"Could not export: {err.strerror}") from None
        except OSError as err:
            raise ChatError(f"Could not export to {target}: {err.strerror or err}") from None
        return target

    async def info(self) -> str:
        storage = self.s.session.storage
        stats = await storage.get_session_stats()
        meta = await storage.get_metadata()
        where = f" · {meta.path}" if meta.path else ""
        return (f"Session {self.s.session.session_id}{where}\n{stats.entry_count} entries · "
                f"{stats.message_count} messages · {stats.total_tokens:,} tokens · ${stats.cost_total:.4f} (all branches)")
