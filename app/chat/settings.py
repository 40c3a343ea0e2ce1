"""The model settings of a chat: the model, the thinking level, the user's instructions and the
system prompt they make."""

from __future__ import annotations

from typing import TYPE_CHECKING

from treechat.agent.tools import make_tools
from treechat.chat.events import (
    Notice,
    StatusChanged,
)
from treechat.chat.models import ChatError
from treechat.chat.navigation import ChatNavigation
from treechat.session.instructions import CUSTOM_TYPE as INSTRUCTIONS_TYPE
from treechat.storage.base import StorageError

if TYPE_CHECKING:
    pass


class ChatSettings(ChatNavigation):

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
