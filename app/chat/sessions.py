"""Sessions: open one (what was typed and queued in the last one becomes its draft), a new one,
resume, delete, list, close."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from treechat.chat.events import (
    Notice,
    SessionOpened,
)
from treechat.chat.runs import ChatRuns
from treechat.load_warning import load_warning
from treechat.session.instructions import stored_instructions
from treechat.session.session import Session
from treechat.shown_path import prompts
from treechat.storage.base import SessionStorage, SessionSummary, StorageError

if TYPE_CHECKING:
    pass


class ChatSessions(ChatRuns):

    async def open(self, storage: SessionStorage, *, composer_text: str | None = None,
                   editor_text: str | None = None) -> None:
        """Make `storage` the current session. What was typed in the composer (`composer_text`)
        and anything still queued become the previous session's draft; `editor_text` (e.g. a
        prompt to edit after `fork before`) goes to the composer after this session's own draft."""
        previous = self._session
        if previous is not None:
            await self._leave(previous, composer_text if previous.session_id != storage.session_id else None)
        session = await Session.open(storage)
        self._session = session
        self._files = None
        self._stop_observing = session.changes.subscribe(self._on_session_change)
        self.preview_id, self.leaf_history, self.abandoned_leaf = None, [], None
        loading = await self._open_tree(storage, session.leaf_id)
        self._name, self._first_prompt = await storage.get_session_name(), None
        await self._load_state()
        if not self._system_given:
            stored = await stored_instructions(storage, self.tree.path_ids(session.leaf_id))
            self.prompt_builder.instructions = stored if isinstance(stored, str) else None  # cleared or never set
        path = await self._path_to_show()
        draft = self.drafts.take(storage.session_id)
        text = "\n\n".join(t for t in (draft, editor_text) if t) or None
        history = await prompts(storage, self.tree, path)
        marks, labels = self._path_marks(path)
        self._emit(SessionOpened(session_id=storage.session_id, tree=self.tree, leaf_id=session.leaf_id, path=path,
                                 header=self.header(), status=self.status(), composer_text=text,
                                 history=tuple(history), tree_loading=loading, marks=marks, labels=labels))
        self._emit(self.readiness())
        self.local.probe(self.current_model())  # its window, asked in the background from now on
        warning = load_warning(storage)
        if warning:
            self._emit(Notice(warning, "warning"))

    async def _leave(self, session: Session, composer_text: str | None) -> None:
        self._stop_tree_load()
        queued = await self._end_agent()
        self.drafts.save(session.session_id, [*queued, composer_text or ""])
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        await self.drop_if_empty(session.session_id)

    async def _end_agent(self) -> list[str]:
        """Stop a running reply (it is saved as aborted); the queued texts come back."""
        queued: list[str] = []
        if self._agent is not None:
            q = self._agent.queue_update()
            queued = [*q.steering, *q.follow_up]
            await self._agent.clear_queue()
            if self._agent.is_streaming:
                await self._agent.abort()
            if self._unsubscribe_agent is not None:
                self._unsubscribe_agent()
            self._agent = None
        if self._run_task is not None:
            await asyncio.gather(self._run_task, return_exceptions=True)
            self._run_task = None
        return queued

    async def new_session(self, *, composer_text: str | None = None) -> None:
        await self.open(await self.catalog.create(cwd=self.cwd), composer_text=composer_text)

    async def resume(self, session_ref: str, *, composer_text: str | None = None) -> None:
        await self.open(await self.catalog.open(session_ref), composer_text=composer_text)

    async def drop_if_empty(self, session_id: str) -> None:
        """A session nobody wrote to is not worth a row in the list."""
        try:
            storage = await self.catalog.open(session_id)
            if (await storage.get_session_stats()).entry_count == 0:
                await self.catalog.delete(session_id)
        except (StorageError, OSError):  # best effort: never block switching or quitting on cleanup
            pass

    async def close(self, *, composer_text: str | None = None) -> None:
        """Quit: a running reply is stopped (and saved); typed and queued text becomes the draft."""
        if self._session is not None:
            await self._leave(self._session, composer_text)
            self._session = None
        self.local.close()
        await self.mcp.close()

    async def delete_session(self, session_id: str) -> None:
        if session_id == self.session_id:
            await self.new_session()
        await self.catalog.delete(session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        """Every session with something in it (and the current one), newest first."""
        return [r for r in await self.catalog.list() if r.entry_count > 0 or r.id == self.session_id]
