"""Comparing: one prompt to several models (issue 39). `/compare MODEL MODEL … -- PROMPT` sends it
now; `/compare MODEL MODEL …` (or Enter in the model picker with models marked and nothing typed)
puts `/compare MODEL MODEL … -- ` in the composer for the prompt, so what will happen is on screen
and editable. The controller starts a run per model on sibling branches from the leaf
(`Chat.compare`; the leaf stays); the side-by-side view (`widgets/compare/`) shows the replies as
they stream, fed from the controller's events (`show`, which the App calls for every event while
the view is open); Enter there moves the leaf to the chosen branch, Esc leaves it where it was."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.feature import model_refs
from ..registry import command

if TYPE_CHECKING:
    from treechat.chat import events as ev
    from treechat.chat.compare import Comparison
    from treechat.chat.events import ChatEvent
    from treechat.widgets.compare.view import CompareView, State

    from ..shell import Shell


def parse(args: str) -> tuple[list[str], str | None]:
    """`A B -- PROMPT` → ([A, B], PROMPT); without `--`: the models and None."""
    words = args.split(" ")
    if "--" not in words:
        return args.split(), None
    at = words.index("--")
    return " ".join(words[:at]).split(), " ".join(words[at + 1:]).strip()


class Comparing:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.view: CompareView | None = None
        self.models: dict[str, str] = {}  # the runs of the comparison shown: run id → model
        self.tips: dict[str, str] = {}  # each run's newest entry (Enter moves the leaf there)
        self.states: dict[str, State] = {}

    @command("compare", title="One prompt to several models", args="MODEL MODEL … [-- PROMPT]",
             help="send the prompt after -- to each model at once, on sibling branches, and compare the replies "
                  "side by side (without a prompt: the composer asks for it)", complete=model_refs)
    async def cmd_compare(self, args: str) -> None:
        from treechat.chat import ChatError

        models, prompt = parse(args)
        if not models:
            self.shell.show_error("/compare MODEL MODEL … [-- PROMPT]: one prompt to each model at once (in the model "
                                  "picker, Ctrl+L, Space marks models).")
            return
        try:
            self.shell.chat.check_compare(models)
        except ChatError as err:
            self.shell.show_error(str(err))
            if prompt:
                self.shell.composer.give_back(f"/compare {args}")
            return
        if prompt:
            self.start(models, prompt)
        else:
            self.ask_prompt(models)

    def ask_prompt(self, models: list[str]) -> None:
        """The composer gets `/compare MODELS -- ` and waits for the prompt."""
        composer = self.shell.composer
        composer.set_text(f"/compare {' '.join(models)} -- ")
        composer.focus()
        self.shell.notify(f"Type the prompt after -- and press Enter: it goes to {len(models)} models at once.",
                          timeout=6)

    def start(self, models: list[str], prompt: str) -> None:
        """Send `prompt` to `models` (from a worker: a file outside the working folder is asked about)."""
        self.shell.run_worker(self._start(models, prompt), group="send")

    async def _start(self, models: list[str], prompt: str) -> None:
        comparison = await self.shell.attempt(self.shell.chat.compare(prompt, models, expand=True))
        if comparison is None:
            self.shell.composer.give_back(f"/compare {' '.join(models)} -- {prompt}")
            return
        await self._watch(comparison, prompt)

    async def _watch(self, comparison: Comparison, prompt: str) -> None:
        from treechat.text.sanitize import sanitize_line
        from treechat.widgets.compare.view import CompareView

        self.models = {c.run: c.model for c in comparison.runs}
        self.tips, self.states = {}, dict.fromkeys(self.models, "waiting")
        first = prompt.strip().splitlines()[0] if prompt.strip() else ""
        title = f"Compare · {len(self.models)} models · {sanitize_line(first, 80)}"
        self.view = CompareView(list(self.models.items()), title)
        try:
            chosen = await self.shell.ask(self.view)
        finally:
            self.view = None
        if chosen is not None:
            await self.choose(chosen.run)

    async def choose(self, run: str) -> None:
        """The leaf to the chosen run's branch: its reply, or as far as it came (it follows the run from there)."""
        tip = self.tips.get(run)
        if tip is None:
            self.shell.show_error(f"{self.models.get(run, run)} has written nothing yet: the leaf stays where it was.")
            return
        await self.shell.attempt(self.shell.chat.move_to(tip))

    # ------------------------------------------------------------ fed by the controller's events

    def watching(self, run: str | None) -> bool:
        """A run whose reply the open view shows (the App lets its streaming through, off screen too)."""
        return self.view is not None and run in self.models

    def show(self, event: ChatEvent) -> None:
        from treechat.chat import events as ev
        from treechat.storage.model import message_text

        view = self.view
        if view is None:
            return
        if isinstance(event, ev.SessionOpened):  # another session: its runs were stopped, and are not its
            view.dismiss(None)
        elif isinstance(event, ev.ReplyStreaming) and event.run in self.models:
            view.set_reply(event.run, message_text(event.message))
            self._state(event.run, "streaming")
        elif isinstance(event, ev.ChatDelta):
            self._delta(event)

    def _delta(self, delta: ev.ChatDelta) -> None:
        from treechat.storage.model import AssistantMessage, MessageEntry, message_text

        assert self.view is not None
        for appended in delta.appended:
            run = appended.run
            if run not in self.models:
                continue
            entry = appended.entry
            self.tips[run] = entry.id
            if not isinstance(entry, MessageEntry) or not isinstance(entry.message, AssistantMessage):
                continue
            reply = entry.message
            self.view.set_reply(run, message_text(reply))
            if reply.stop_reason == "error":
                self._state(run, "failed", reply.error_message or "the provider failed")
            elif reply.stop_reason == "aborted":
                self._state(run, "failed", "stopped")
            elif reply.stop_reason == "toolUse":
                self._state(run, "streaming", "using tools")
            else:
                self._state(run, "done")
        if delta.runs is not None:
            going = {t.run for t in delta.runs}
            for run, state in self.states.items():
                if run not in going and state in ("waiting", "streaming"):
                    self._state(run, "failed", "ended without a reply")

    def _state(self, run: str, state: State, detail: str = "") -> None:
        self.states[run] = state
        if self.view is not None:
            self.view.set_state(run, state, detail)
