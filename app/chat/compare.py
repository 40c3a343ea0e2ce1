"""One prompt, several models (issue 39): a run per model, started at once on sibling branches from
the person's leaf (each branch begins beside it, so the leaf stays where it was: the person picks a
reply afterwards with `move_to`); their replies, each as its run ends.

The runs are ordinary runs (`Runs.new_run`, `Runs.launch`): they count against `max_runs`, their
events carry their ids, Esc on a branch stops its run. Everything that can be refused is refused
before anything is written: fewer than two models, an unknown model or one without a key, more runs
than `max_runs`, a read-only store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treechat.chat.errors import ChatError
from treechat.chat.events import StatusChanged
from treechat.storage.model import AssistantMessage
from treechat.text.expanded import template_message

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.runs import Runs
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState, Run
    from treechat.llm.types import ModelInfo


@dataclass(frozen=True)
class ComparedReply:
    """How one model's run ended: its reply (the run's last assistant message), the tip of its
    branch (`Chat.move_to` there picks it) and why it failed (None: it answered)."""

    model: str  # "provider/id"
    run: str
    tip: str | None
    reply: AssistantMessage | None
    error: str | None


@dataclass(frozen=True, eq=False)
class Compared:
    """One model's run, started: its id (the events' `run`), its model, and its reply to come."""

    model: str  # "provider/id", as asked
    run: str
    reply: asyncio.Future[ComparedReply]  # done when its run ends (never fails: a failure is `error`)


@dataclass(frozen=True, eq=False)
class Comparison:
    """The runs of one prompt sent to several models, in the order the models were given, and
    where they branch from (the leaf when it was sent; it stays there)."""

    fork: str | None
    runs: tuple[Compared, ...]

    async def replies(self) -> tuple[ComparedReply, ...]:
        """Every run's reply, in the models' order, once all have ended."""
        return tuple([await c.reply for c in self.runs])


def reply_error(reply: AssistantMessage | None) -> str | None:
    """Why a run gave no answer (None: it answered)."""
    if reply is None:
        return "the model returned nothing"
    if reply.stop_reason == "error":
        return reply.error_message or "the provider failed"
    if reply.stop_reason == "aborted":
        return "stopped before it finished"
    return None


class Compare:
    def __init__(self, s: ChatState, *, model_choice: ModelChoice, extras: Extras, shown: Shown, runs: Runs) -> None:
        self.s = s
        self.model_choice = model_choice
        self.extras = extras
        self.shown = shown
        self.runs = runs

    def models(self, refs: Sequence[str]) -> list[ModelInfo]:
        """Each model named, checked (known, with a key) and refused with one line before anything is written."""
        refs = [r.strip() for r in refs if r.strip()]
        if len(refs) < 2:
            raise ChatError("Comparing needs two models or more (for one, choose it and send); nothing was sent.")
        going, most = len(self.s.runs), self.s.settings.max_runs
        if going + len(refs) > most:
            already = f" and {going} {'goes' if going == 1 else 'go'} already:" if going else ","
            raise ChatError(f"{len(refs)} models need {len(refs)} runs{already} more than max_runs = {most} in "
                            "config.toml allows; nothing was sent.")
        self.runs.check_writable()
        if self.s.run_here() is not None:  # its branch grows under the leaf: siblings of what?
            raise ChatError("A run goes on this branch: compare from another place, or stop it first (Esc); nothing "
                            "was sent.")
        found: list[ModelInfo] = []
        for ref in refs:
            if "/" not in ref:
                raise ChatError(f"Unknown model {ref!r}: name it as PROVIDER/ID (Ctrl+L lists them); nothing was sent.")
            try:
                model = self.model_choice.local.known(self.s.registry.resolve(ref))
            except ValueError as err:
                raise ChatError(f"{err} Nothing was sent.") from None
            problem = self.s.registry.key_problem(model)
            if problem:
                raise ChatError(f"{ref}: {problem}")
            found.append(model)
        return found

    async def compare(self, text: str, refs: Sequence[str], *, attach: Sequence[str] = (),
                      expand: bool = False, wait_mcp: bool = False) -> Comparison:
        if not text.strip() and not attach:
            raise ChatError("Nothing to send.")
        self.models(refs)  # said before any question is asked
        if wait_mcp:
            await self.runs.wait_mcp()
        typed, template = text.strip(), None
        await self.extras.vet_project_files()
        if expand:
            template = self.extras.template_of(text)
            text = await self.extras.expand(text)
        prepared = await self.runs.attached(text.strip(), attach)
        models = self.models(refs)  # (again: a run may have started while this one was asked about)
        self.extras.say_starting()
        message = None if template is None else template_message(prepared.text, prepared.images, template, typed)
        if self.s.preview_id is not None:
            await self.shown.preview(None)
        self.s.abandoned_leaf = None
        session = self.s.session
        fork = session.leaf_id
        made: list[Run] = []
        # in git: the checkout untouched until one is picked; elsewhere: no run changes files
        trees, refused = await self.runs.worktrees_for(len(models))
        try:
            for model, tree in zip(models, trees, strict=True):
                made.append(await self.runs.new_run(session.branch(fork, beside=True), model, tree,
                                                    changes_refused=refused))
        except BaseException:
            await self.runs.drop_worktrees(trees)
            raise
        started: list[Compared] = []
        for model, run in zip(models, made, strict=True):
            sent = len(run.agent.state.messages)
            run.refresh_prompt()  # today's date, AGENTS.md as it is now
            rid = self.runs.launch(run, [message] if message is not None else prepared.text, prepared.images)
            ref = f"{model.provider}/{model.id}"
            started.append(Compared(ref, rid, asyncio.ensure_future(self._reply(run, ref, rid, sent))))
        self.s.emit(StatusChanged())
        return Comparison(fork, tuple(started))

    @staticmethod
    async def _reply(run: Run, ref: str, rid: str, sent: int) -> ComparedReply:
        """The run's reply once it has ended (a stop that sends its queue on starts it again)."""
        while run.task is not None and not run.task.done():
            await asyncio.gather(run.task, return_exceptions=True)
        reply = next((m for m in reversed(run.agent.state.messages[sent:]) if isinstance(m, AssistantMessage)), None)
        return ComparedReply(ref, rid, run.tip, reply, reply_error(reply))
