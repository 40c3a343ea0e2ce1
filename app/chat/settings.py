"""The model settings of a chat: the model, the thinking level, the tools, the user's
instructions and the system prompt they make."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from treechat.agent.tools import BUILTIN_TOOLS, make_tools
from treechat.chat.events import Notice, StatusChanged
from treechat.chat.models import ChatError
from treechat.chat.tool_set import BUILTIN_WORDS, ToolState
from treechat.session.instructions import CUSTOM_TYPE as INSTRUCTIONS_TYPE
from treechat.storage.base import StorageError

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.models import Models
    from treechat.chat.runs import Runs
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState


class ModelSettings:
    def __init__(self, s: ChatState, *, extras: Extras, models: Models, shown: Shown, runs: Runs) -> None:
        self.s = s
        self.extras = extras
        self.models = models
        self.shown = shown
        self.runs = runs

    def system_prompt(self) -> str:
        """The system prompt the next request carries."""
        self.extras.load_extensions()  # the skills it lists
        if self.s.agent is not None:
            return self.s.prompt_builder.build(list(self.s.agent.state.tools))
        on = set(self.shown.tool_names())
        tools = [*make_tools([n for n in BUILTIN_TOOLS if n in on], cwd=self.s.cwd),
                 *(t for t in self.extras.mcp.tools() if t.name in on)]
        return self.s.prompt_builder.build(tools)

    # ------------------------------------------------------------ tools (chat/tool_set.py)

    def tools(self) -> list[ToolState]:
        """`/tools`: every tool there is (the six built-in ones, then the MCP servers' running
        now), each with whether the next request carries it."""
        on = set(self.shown.tool_names())
        rows = [ToolState(n, n in on, True, BUILTIN_WORDS[n]) for n in BUILTIN_TOOLS]
        for tool in self.extras.mcp.tools():
            words = " ".join(tool.description.split())
            rows.append(ToolState(tool.name, tool.name in on, False, words[:100] + ("…" if len(words) > 100 else "")))
        return rows

    async def set_tool(self, name: str, on: bool) -> list[str]:
        """`/tools NAME on|off` (`all`: every tool); the tools on afterwards."""
        rows = self.tools()
        if name != "all" and name not in {r.name for r in rows}:
            raise ChatError(f"No tool {name!r}: the tools are {', '.join(r.name for r in rows)} (or all).")
        wanted = {r.name for r in rows if (r.on if r.name != name and name != "all" else on)}
        return await self.set_tools(wanted)

    async def set_tools(self, names: Iterable[str]) -> list[str]:
        """Exactly `names` on (the `/tools` dialog): each tool whose state changes is turned on or
        off for as long as the session is open, and the path records the new set (at once when
        nothing runs; else just before the next request). The tools on afterwards."""
        wanted = set(names)
        rows = self.tools()
        unknown = sorted(wanted - {r.name for r in rows})
        if unknown:
            raise ChatError(f"No tool {unknown[0]!r}: the tools are {', '.join(r.name for r in rows)}.")
        for row in rows:
            if row.on != (row.name in wanted):
                self.s.tool_choice.turn(row.name, row.name in wanted)
        agent = self.s.agent
        if agent is not None:
            agent.offer_tools(self.s.allowed_tools(self.extras.mcp.tools()), pinned=self.s.tool_choice.on)
        now = self.shown.tool_names()
        try:
            if agent is not None and not self.s.is_running:
                await agent.record_tools(chosen=True)
            elif agent is None and self.s.session.leaf_id is not None and now != self.s.path_state.active_tool_names:
                # kept with the session now (an empty one records its set with its first request)
                await self.s.session.append_active_tools_change(now)
        except (StorageError, OSError) as err:
            raise ChatError(f"Could not write to this session: {getattr(err, 'strerror', None) or err}") from None
        if self.s.refresh_prompt is not None:
            self.s.refresh_prompt()  # the system prompt lists the tools enabled
        self.s.emit(StatusChanged())
        return now

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
