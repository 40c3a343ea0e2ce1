"""The questions the agent asks in the app: one on screen at a time (the rest wait in order), and
who each key belongs to while one is up.

Every question — a shell command, an edit or write, a read outside the working folder, an MCP
call, a restore, a project's `.mcp.json` — goes through `ask(spec)`, which shows a
`QuestionPanel` above the composer and returns the answer (naming the sub-agent that asks, if one does). The App hands every key and paste to
`route_key` / `route_paste` before Textual dispatches it; the panel's `Gate` decides (see
`treechat.widgets.question.gate`): an answer, reading it, moving to it, or typing, which goes on to
the composer as if the question were not there.

"Busy" (the question appears in the typing state) is decided by what the person did, not by how
long ago: they typed since they last handed over — sent a prompt from an idle composer, moved in
the tree, asked for a restore or for the trust question — or their draft changed since.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from textual import events
from textual.css.query import NoMatches
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.app import App

    from treechat.widgets.composer.view import Composer
    from treechat.widgets.question.gate import Choice
    from treechat.widgets.question.panel import QuestionPanel, QuestionSpec


@dataclass
class _Asked:
    spec: QuestionSpec
    answer: asyncio.Future[Choice] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Questions:
    """The App's questions (one object per App)."""

    def __init__(self, app: App[int], composer: Callable[[], Composer]) -> None:
        self.app, self.composer = app, composer
        self.waiting: deque[_Asked] = deque()
        self.current: tuple[_Asked, QuestionPanel] | None = None
        self.typed_at = 0.0  # the newest key or paste that was the person's, not an answer's
        self.handed_over_at = 0.0  # the newest send from an idle composer, tree move, asked-for question
        self.draft_at_handover = ""
        self.focus_before: Widget | None = None

    # ------------------------------------------------------------ what the person did

    def handed_over(self, at: float | None = None) -> None:
        """The person handed over to the agent (what comes next is its doing, not theirs)."""
        self.handed_over_at = time.monotonic() if at is None else at
        self.draft_at_handover = self._draft()

    def busy(self) -> bool:
        return self.typed_at > self.handed_over_at or self._draft() != self.draft_at_handover

    def _draft(self) -> str:
        try:
            return self.composer().text
        except NoMatches:
            return ""

    # ------------------------------------------------------------ asking

    @property
    def panel(self) -> QuestionPanel | None:
        return self.current[1] if self.current is not None else None

    async def ask(self, spec: QuestionSpec) -> Choice:
        """Show `spec` (after the questions before it) and wait for its answer. Cancelled (the run
        was stopped, the app closes), the question is withdrawn. A sub-agent's question (the
        `task` tool's child asks inside `asking_as`, read here in the asking task) names it."""
        from treechat.agent.asker import current_asker

        if not spec.asker and (who := current_asker()) is not None:
            spec = replace(spec, asker=who.title)
        asked = _Asked(spec)
        self.waiting.append(asked)
        if self.current is None:
            await self._show_next()
        try:
            return await asked.answer
        finally:
            if not asked.answer.done() or asked.answer.cancelled():  # (a cancelled wait cancels the future)
                await self._withdraw(asked)

    async def _show_next(self) -> None:
        from treechat.widgets.composer.queue_tray import QueueTray
        from treechat.widgets.question.panel import QuestionPanel

        while self.waiting and self.current is None:
            asked = self.waiting.popleft()
            if asked.answer.done():  # withdrawn while it waited
                continue
            panel = QuestionPanel(asked.spec, busy=self.busy())
            self.current = (asked, panel)
            main = self.app.screen_stack[0]
            await main.query_one("#chat").mount(panel, before=main.query_one(QueueTray))
            if panel.gate.state == "ready":
                self.focus_before = main.focused
                panel.take_focus()
            if self.app.screen is not main:
                self.app.notify("The agent is asking you something: close this to answer it.", timeout=8)

    def answered(self, panel: QuestionPanel, choice: Choice) -> None:
        """(The App's handler of `QuestionPanel.Answered`.)"""
        if self.current is None or self.current[1] is not panel:
            return
        asked, _ = self.current
        if not asked.answer.done():
            asked.answer.set_result(choice)
        # an answer hands over again (the next question is asked of someone attending), but a
        # draft they had typed still says they are composing
        self.handed_over_at = time.monotonic()
        self.app.run_worker(self._close(panel), group="questions")

    async def _withdraw(self, asked: _Asked) -> None:
        if self.current is not None and self.current[0] is asked:
            await self._close(self.current[1])
        elif asked in self.waiting:
            self.waiting.remove(asked)

    async def _close(self, panel: QuestionPanel) -> None:
        if self.current is None or self.current[1] is not panel:
            return
        had_focus = panel.has_focus_within
        self.current = None
        before, self.focus_before = self.focus_before, None
        await panel.remove()
        if had_focus and self.app.screen_stack:
            main = self.app.screen_stack[0]
            back = before if before is not None and before.is_attached and before.focusable else None
            main.set_focus(back if back is not None else self.composer())
        await self._show_next()

    # ------------------------------------------------------------ keys

    def route_key(self, event: events.Key) -> bool:
        """Before Textual dispatches `event`: True when the question took it (stop there)."""
        from treechat.widgets.question.gate import Answer, Attend, Move, Press, Scroll

        panel = self.panel
        if panel is None or panel.answered or not panel.is_attached:
            self.typed_at = event.time
            return False
        if self.app.screen is not self.app.screen_stack[0]:
            self._let_go(panel, event.time)  # busy with something else (a picker, the help)
            return False
        route = panel.gate.route(event.key, event.time)
        if isinstance(route, Answer):
            panel.answer(route.choice)
        elif isinstance(route, Press):
            panel.press()
        elif isinstance(route, Scroll):
            panel.scroll(route.action)
        elif isinstance(route, Move):
            panel.move(route.step)
        elif isinstance(route, Attend):
            self.attend(panel, event.time)
        else:
            self._let_go(panel, event.time)
            return False
        return True

    def route_paste(self, event: events.Paste) -> None:
        """A paste is never an answer: it is typing (the App then puts it in the composer)."""
        panel = self.panel
        self.typed_at = event.time
        if panel is not None and not panel.answered and panel.is_attached:
            panel.gate.paste()
            self._let_go(panel, event.time)

    def attend(self, panel: QuestionPanel, at: float) -> None:
        """The person moved to the question: it takes the focus, ready to answer."""
        if panel.gate.state == "typing":
            panel.gate.attend(at)
        main = self.app.screen_stack[0]
        if not panel.has_focus_within:
            self.focus_before = main.focused
        panel.take_focus()

    def _let_go(self, panel: QuestionPanel, at: float) -> None:
        """The key is typing: the question lets go of the focus (to the composer) and says how to
        come back to it."""
        self.typed_at = at
        panel.gate.let_go()
        panel.show_state()
        if panel.has_focus_within:
            before, self.focus_before = self.focus_before, None
            back = before if before is not None and before.is_attached and before.focusable else None
            self.app.screen_stack[0].set_focus(back if back is not None else self.composer())
