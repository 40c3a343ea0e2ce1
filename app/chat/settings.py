"""The model settings of a chat: the model, the thinking level, the user's instructions and the
system prompt they make."""

from __future__ import annotations

from typing import TYPE_CHECKING

from treechat.agent.tools import make_tools
from treechat.chat.events import Notice, StatusChanged
from treechat.chat.models import ChatError
from treechat.session.instructions import CUSTOM_TYPE as INSTRUCTIONS_TYPE
from treechat.storage.base import StorageError

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.models import Models
    from treechat.chat.runs import Runs
    from treechat.chat.state import ChatState


class ModelSettings:
    def __init__(self, s: ChatState, *, extras: Extras, models: Models, runs: Runs) -> None:
        self.s = s
        self.extras = extras
        self.models = models
        self.runs = runs

    def system_prompt(self) -> str:
        """The system prompt the next request carries."""
        self.extras.load_extensions()  # the skills it lists
        tools = self.s.agent.state.tools if self.s.agent is not None else [
            *make_tools(self.s.tool_names, cwd=self.s.cwd), *self.extras.mcp.tools()]
        return self.s.prompt_builder.build(list(tools))

    async def set_instructions(self, text: str | None) -> str:
        """`/system TEXT`: the user's own instructions (None or "" removes them), kept with the
        session (an entry on the path: a restart and `context --json` see them); the new prompt."""
        instructions = (text or "").strip() or None
        try:
            await self.s.session.append_custom(INSTRUCTIONS_TYPE, {"text": instructions})
        except StorageError as err:
            raise ChatError(str(err)) from None
        self.s.prompt_builder.instructions = instructions
        if self.s.refresh_prompt is not None:
            return self.s.refresh_prompt()
        return self.system_prompt()

    async def set_model(self, ref: str) -> None:
        try:
            model = self.models.local.known(self.s.registry.resolve(ref))
        except ValueError as err:
            raise ChatError(str(err)) from None
        self.s.model_ref = ref
        if self.s.agent is None:
            await self.runs.ensure_agent()
        else:
            await self.s.agent.set_model(model)
            self.models.local.probe(model)
        self.s.emit(StatusChanged())
        self.s.emit(self.models.readiness())

    async def set_thinking(self, level: str) -> str:
        """The level in use afterwards (clamped to what the model supports; a notice says so)."""
        agent = await self.runs.ensure_agent()
        try:
            got = await agent.set_thinking_level(level)
        except ValueError as err:
            raise ChatError(str(err)) from None
        if got != level:
            self.s.emit(Notice(f"{agent.state.model.ref} supports thinking up to {got!r}."))
        self.s.emit(StatusChanged())
        return got
