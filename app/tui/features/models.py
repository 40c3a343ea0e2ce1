"""Models: which model answers and how hard it thinks. `/model` (Ctrl+L) opens the picker (or sets
`/model PROVIDER/ID`), `/thinking` (Alt+T) the levels; Tab after either offers what the registry
knows (the models chosen lately first) or what the current model can use. The model lists are
`model_choices.py`; the controller sets the model and says why not (`ChatError`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import TuiBase
from ..registry import command

if TYPE_CHECKING:  # loaded after the first frame (app/tui/starting.py)
    from treechat.chat import Chat

# The dialogs (treechat.widgets.screens) and the model lists are imported by the commands that
# open them: they load after the first frame.


def model_refs(chat: Chat) -> list[str]:
    """Tab after `/model `: the models chosen lately, then every model the registry knows."""
    from treechat.config.state import StateFile

    return [*StateFile(chat.settings.home).recent_models(), *(m.ref for m in chat.registry.models())]


def thinking_choices(chat: Chat) -> tuple[str, ...]:
    """Tab after `/thinking `: the levels the current model can use (what the picker offers)."""
    from ..model_choices import thinking_levels

    return thinking_levels(chat.current_model())[0]


class Models(TuiBase):
    @command("model", title="Choose the model", args="[PROVIDER/ID]", help="pick or type the model", key="Ctrl+L",
             complete=model_refs)
    async def cmd_model(self, args: str) -> None:
        """`/model REF` sets it (an unknown provider is the banner's one sentence); `/model` opens
        the picker, which shows the controller's refusal in the dialog and stays open."""
        if args:
            error = await self.choose_model(args)
            if error:
                self.show_error(error)
            return
        from treechat.config.state import StateFile
        from treechat.widgets.screens import ModelPicker

        from ..model_choices import model_groups

        current = self.chat.current_model()
        recent = StateFile(self.chat.settings.home).recent_models()
        picker = ModelPicker(model_groups(self.chat, recent), current=current.ref if current else None,
                             choose=self.choose_model)
        self.push_screen(picker)

        async def ask_servers_again() -> None:  # a server started since start-up shows up here
            self.chat.add_local_servers(await self.chat.local.found(busy=self.chat.busy_server()))
            if picker.is_attached:
                picker.set_groups(model_groups(self.chat, recent))

        if getattr(self, "detect_servers", True):
            self.run_worker(ask_servers_again(), group="detect")

    async def choose_model(self, ref: str) -> str | None:
        """Set the model; None when done (and it goes first in the recent list), else why not."""
        from treechat.chat import ChatError
        from treechat.config.state import StateFile

        try:
            await self.chat.set_model(ref)
        except ChatError as err:
            return str(err)
        StateFile(self.chat.settings.home).remember_model(ref)
        return None

    @command("thinking", title="Thinking level", args="[off|minimal|low|medium|high|xhigh]",
             help="how hard the model thinks", key="Alt+T", complete=thinking_choices)
    async def cmd_thinking(self, args: str) -> None:
        from treechat.widgets.screens import ThinkingPicker

        from ..model_choices import thinking_levels

        async def done(level: str | None) -> None:
            if level:
                await self.attempt(self.chat.set_thinking(level))

        if args:
            await done(args)
            return
        levels, note = thinking_levels(self.chat.current_model())
        self.push_screen(ThinkingPicker(self.chat.status().thinking, levels, note), callback=done)
