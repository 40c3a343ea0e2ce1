"""Which session is open (`SessionSwitch`): open one (what was typed and queued in the last one
becomes its draft), a new one, resume, delete, list, close."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from treechat.chat.events import Notice, SessionOpened
from treechat.load_warning import load_warning
from treechat.session.instructions import stored_instructions
from treechat.session.session import Session
from treechat.shown_path import prompts
from treechat.storage.base import SessionStorage, SessionSummary, StorageError

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.observe import Observer
    from treechat.chat.runs import Runs
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState
    from treechat.chat.tree import ChatTree
    from treechat.chat.workspace import Workspace


class SessionSwitch:
    def __init__(self, s: ChatState, *, model_choice: ModelChoice, extras: Extras, observer: Observer, runs: Runs, shown: Shown,
                 trees: ChatTree, workspace: Workspace) -> None:
        self.s = s
        self.model_choice = model_choice
        self.extras = extras
        self.observer = observer
        self.runs = runs
        self.shown = shown
        self.trees = trees
        self.workspace = workspace
        self._stop_observing: Callable[[], None] | None = None  # the session's appends, observed

    async def open(self, storage: SessionStorage, *, composer_text: str | None = None,
                   editor_text: str | None = None) -> None:
        """Make `storage` the current session. What was typed in the composer (`composer_text`)
        and anything still queued become the previous session's draft; `editor_text` (e.g. a
        prompt to edit after `fork before`) goes to the composer after this session's own draft."""
        previous = self.s.current
        self.workspace.sweep_worktrees()  # (once: the worktrees of a process killed before this start)
        stopped = len(self.s.runs)
        if previous is not None:
            await self._leave(previous, composer_text if previous.session_id != storage.session_id else None)
        session = await Session.open(storage)
        self.s.current = session
        self.s.tool_choice.reset()  # what /tools changed was this session's (its path records the rest)
        self.s.files = None
        self._stop_observing = session.changes.subscribe(self.observer.on_session_change)
        self.s.preview_id, self.s.leaf_history, self.s.abandoned_leaf = None, [], None
        loading = await self.trees.open(storage, session.leaf_id)
        self.s.name, self.s.first_prompt = await storage.get_session_name(), None
        from treechat.chat.subagents import parent_link  # (it imports the agent's tools)

        link = await parent_link(storage)
        self.s.sub_agent_of = link.session_id if link is not None else None
        await self.observer.load_state()
        if not self.s.system_given:
            stored = await stored_instructions(storage, self.s.tree.path_ids(session.leaf_id))
            self.s.prompt_builder.instructions = stored if isinstance(stored, str) else None  # cleared or never set
        path = await self.shown.path_to_show()
        draft = self.s.drafts.take(storage.session_id)
        text = "\n\n".join(t for t in (draft, editor_text) if t) or None
        history = await prompts(storage, self.s.tree, path)
        marks, labels = self.shown.path_marks(path)
        self.s.emit(SessionOpened(session_id=storage.session_id, tree=self.s.tree, leaf_id=session.leaf_id, path=path,
                                 header=self.shown.header(), status=self.shown.status(), composer_text=text,
                                 history=tuple(history), tree_loading=loading, marks=marks, labels=labels))
        self.s.emit(self.model_choice.readiness())
        self.model_choice.local.probe(self.model_choice.current_model())  # its window, asked in the background from now on
        warning = load_warning(storage)
        if warning:
            self.s.emit(Notice(warning, "warning"))
        if stopped:  # a session's runs are its own: leaving it stopped them
            self.s.emit(Notice(f"{stopped} run{'s' if stopped > 1 else ''} of the session left stopped; "
                               f"{'their replies are' if stopped > 1 else 'its reply is'} kept as far as "
                               f"{'they' if stopped > 1 else 'it'} came.", "warning"))

    async def _leave(self, session: Session, composer_text: str | None) -> None:
        self.trees.stop_load()
        queued = await self.runs.end_agent()
        try:
            await session.settle()  # the person's leaf where a file keeps it (JSONL), after runs wrote elsewhere
        except (StorageError, OSError):
            pass  # a store gone bad: what was written is kept; the leaf is the newest entry's
        self.s.drafts.save(session.session_id, [*queued, composer_text or ""])
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        await self.drop_if_empty(session.session_id)

    async def new_session(self, *, composer_text: str | None = None) -> None:
        await self.open(await self.s.catalog.create(cwd=self.s.cwd), composer_text=composer_text)

    async def resume(self, session_ref: str, *, composer_text: str | None = None) -> None:
        await self.open(await self.s.catalog.open(session_ref), composer_text=composer_text)

    async def drop_if_empty(self, session_id: str) -> None:
        """A session nobody wrote to is not worth a row in the list."""
        try:
            storage = await self.s.catalog.open(session_id)
            if (await storage.get_session_stats()).entry_count == 0:
                await self.s.catalog.delete(session_id)
        except (StorageError, OSError):  # best effort: never block switching or quitting on cleanup
            pass

    async def close(self, *, composer_text: str | None = None) -> None:
        """Quit: a running reply is stopped (and saved); typed and queued text becomes the draft."""
        self.workspace.close()
        if self.s.current is not None:
            await self._leave(self.s.current, composer_text)
            self.s.current = None
        self.model_choice.local.close()
        await self.extras.mcp.close()

    async def delete_session(self, session_id: str) -> None:
        if session_id == self.s.session.session_id:
            await self.new_session()
        await self.s.catalog.delete(session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        return [r for r in await self.s.catalog.list() if r.entry_count > 0 or r.id == self.s.session.session_id]
