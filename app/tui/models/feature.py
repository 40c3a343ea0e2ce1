"""Models: which model answers and how hard it thinks. `/model` (Ctrl+L) opens the picker (or sets
`/model PROVIDER/ID`), `/thinking` (Alt+T) the levels; Tab after either offers what the registry
knows (the models chosen lately first) or what the current model can use. The model lists are
`choices.py`; the controller sets the model and says why not (`ChatError`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/startup/)
    from treechat.chat import Chat

    from ..compare.feature import Comparing
    from ..shell import Shell

# The dialogs (treechat.widgets.screens) and the model lists are imported by the commands that
# open them: they load after the first frame.


def model_refs(chat: Chat) -> list[str]:
    """Tab after `/model `: the models chosen lately, then every model the registry knows."""
    from treechat.config.state import StateFile

    return [*StateFile(chat.settings.home).recent_models(), *(m.ref for m in chat.registry.models())]


def thinking_choices(chat: Chat) -> tuple[str, ...]:
    """Tab after `/thinking `: the levels the current model can use (what the picker offers)."""
    from .choices import thinking_levels

    return thinking_levels(chat.current_model())[0]


class Models:
    def __init__(self, shell: Shell, *, detect_servers: bool, comparing: Comparing) -> None:
        self.shell = shell
        self.detect_servers = detect_servers  # a server started since start-up is asked for in the picker
        self.comparing = comparing  # Space in the picker marks models: Enter sends to each (compare/)

    @command("model", title="Choose the model", args="[PROVIDER/ID]", help="pick or type the model", key="Ctrl+L",
             complete=model_refs)
    async def cmd_model(self, args: str) -> None:
        """`/model REF` sets it (an unknown provider is the banner's one sentence); `/model` opens
        the picker, which shows the controller's refusal in the dialog and stays open."""
        if args:
            error = await self.choose_model(args)
            if error:
                self.shell.show_error(error)
            return
        from treechat.config.state import StateFile
        from treechat.widgets.screens import ModelPicker

        from .choices import model_groups

        chat = self.shell.chat
        current = chat.current_model()
        recent = StateFile(chat.settings.home).recent_models()
        picker = ModelPicker(model_groups(chat, recent), current=current.ref if current else None,
                             choose=self.choose_model, compare=self.compare_marked)
        self.shell.show(picker)

        async def ask_servers_again() -> None:  # a server started since start-up shows up here
            chat.add_local_servers(await chat.local.found(busy=chat.busy_server()))
            if picker.is_attached:
                picker.set_groups(model_groups(chat, recent))

        if self.detect_servers:
            self.shell.run_worker(ask_servers_again(), group="detect")

    async def choose_model(self, ref: str) -> str | None:
        """Set the model; None when done (and it goes first in the recent list), else why not."""
        from treechat.chat import ChatError
        from treechat.config.state import StateFile

        chat = self.shell.chat
        try:
            await chat.set_model(ref)
        except ChatError as err:
            return str(err)
        StateFile(chat.settings.home).remember_model(ref)
        return None

    async def compare_marked(self, refs: list[str]) -> str | None:
        """Enter in the picker with models marked: the composer's message goes to each of them now,
        or, with nothing typed, the composer asks for it (`/compare MODELS -- `); else why not."""
        from treechat.chat import ChatError

        try:
            self.shell.chat.check_compare(refs)
        except ChatError as err:
            return str(err)
        composer = self.shell.composer
        text = composer.text.strip()
        if text and not text.startswith("/compare"):  # (a prompt template is expanded for each, as when sent)
            composer.set_text("")
            self.comparing.start(refs, text)
        else:
            self.comparing.ask_prompt(refs)  # (a /compare typed there gives way to these models)
        return None

    @command("thinking", title="Thinking level", args="[off|minimal|low|medium|high|xhigh]",
             help="how hard the model thinks", key="Alt+T", complete=thinking_choices)
    async def cmd_thinking(self, args: str) -> None:
        if args:
            await self.set_thinking(args)
            return
        self.shell.run_worker(self._pick_thinking(), group="dialog")

    async def _pick_thinking(self) -> None:
        from treechat.widgets.screens import ThinkingPicker

        from .choices import thinking_levels

        chat = self.shell.chat
        levels, note = thinking_levels(chat.current_model())
        level = await self.shell.ask(ThinkingPicker(chat.status().thinking, levels, note))
        if level:
            await self.set_thinking(level)

    async def set_thinking(self, level: str) -> None:
        await self.shell.attempt(self.shell.chat.set_thinking(level))
