"""The model settings of a chat: the model, the thinking level, the tools, the user's
instructions and the system prompt they make."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from treechat.agent.tools import BUILTIN_TOOLS, make_tools
from treechat.chat.errors import ChatError
from treechat.chat.events import Notice, StatusChanged
from treechat.chat.tool_set import BUILTIN_WORDS, ToolState
from treechat.session.instructions import CUSTOM_TYPE as INSTRUCTIONS_TYPE
from treechat.storage.base import StorageError

if TYPE_CHECKING:
    from treechat.chat.extras import Extras
    from treechat.chat.model_choice import ModelChoice
    from treechat.chat.runs import Runs
    from treechat.chat.shown import Shown
    from treechat.chat.state import ChatState


class ModelSettings:
    def __init__(self, s: ChatState, *, extras: Extras, model_choice: ModelChoice, shown: Shown, runs: Runs) -> None:
        self.s = s
        self.extras = extras
        self.model_choice = model_choice
        self.shown = shown
        self.runs = runs

    def system_prompt(self) -> str:
        self.extras.load_extensions()  # the skills it lists
        if self.s.agent is not None:
            return self.s.prompt_builder.build(list(self.s.agent.state.tools))
        on = set(self.shown.tool_names())
        tools = [*make_tools([n for n in BUILTIN_TOOLS if n in on], cwd=self.s.cwd),
                 *(t for t in self.extras.mcp.tools() if t.name in on)]
        return self.s.prompt_builder.build(tools)

    # ------------------------------------------------------------ tools (chat/tool_set.py)

    def tools(self) -> list[ToolState]:
        on = set(self.shown.tool_names())
        rows = [ToolState(n, n in on, True, BUILTIN_WORDS[n]) for n in BUILTIN_TOOLS]
        for tool in self.extras.mcp.tools():
            words = " ".join(tool.description.split())
            rows.append(ToolState(tool.name, tool.name in on, False, words[:100] + ("…" if len(words) > 100 else "")))
        return rows

    async def set_tool(self, name: str, on: bool) -> list[str]:
        rows = self.tools()
        if name != "all" and name not in {r.name for r in rows}:
            raise ChatError(f"No tool {name!r}: the tools are {', '.join(r.name for r in rows)} (or all).")
        wanted = {r.name for r in rows if (r.on if r.name != name and name != "all" else on)}
        return await self.set_tools(wanted)

    async def set_tools(self, names: Iterable[str]) -> list[str]:
        wanted = set(names)
        rows = self.tools()
        unknown = sorted(wanted - {r.name for r in rows})
        if unknown:
            raise ChatError(f"No tool {unknown[0]!r}: the tools are {', '.join(r.name for r in rows)}.")
        for row in rows:
            if row.on != (row.name in wanted):
                self.s.tool_choice.turn(row.name, row.name in wanted)
        run = self.s.on_screen()  # (runs on other branches keep the tools they started with)
        agent = run.agent if run is not None else None
        if run is not None:
            run.agent.offer_tools(self.s.allowed_tools(run.builtins, self.extras.mcp.tools()), pinned=self.s.tool_choice.on)
        now = self.shown.tool_names()
        try:
            if agent is not None and not self.s.is_running_here:
                await agent.record_tools(chosen=True)
            elif agent is None and self.s.session.leaf_id is not None and now != self.s.path_state.active_tool_names:
                # kept with the session now (an empty one records its set with its first request)
                await self.s.session.append_active_tools_change(now)
        except (StorageError, OSError) as err:
            raise ChatError(f"Could not write to this session: {getattr(err, 'strerror', None) or err}") from None
        self.s.refresh_prompt()  # the system prompt lists the tools enabled
        self.s.emit(StatusChanged())
        return now

    async def set_instructions(self, text: str | None) -> str:
        instructions = (text or "").strip() or None
        try:
            await self.s.session.append_custom(INSTRUCTIONS_TYPE, {"text": instructions})
        except StorageError as err:
            raise ChatError(str(err)) from None
        self.s.prompt_builder.instructions = instructions
        for run in self.s.every_run():  # every branch's agent: the instructions are the chat's
            run.refresh_prompt()
        return self.system_prompt()

    async def set_model(self, ref: str) -> None:
        try:
            model = self.model_choice.local.known(self.s.registry.resolve(ref))
        except ValueError as err:
            raise ChatError(str(err)) from None
        self.s.model_ref = ref
        if self.s.agent is None:
            await self.runs.ensure_agent()
        else:
            await self.s.agent.set_model(model)
            self.model_choice.local.probe(model)
        self.s.emit(StatusChanged())
        self.s.emit(self.model_choice.readiness())

    async def set_thinking(self, level: str) -> str:
        agent = await self.runs.ensure_agent()
        try:
            got = await agent.set_thinking_level(level)
        except ValueError as err:
            raise ChatError(str(err)) from None
        if got != level:
            self.s.emit(Notice(f"{agent.state.model.ref} supports thinking up to {got!r}."))
        self.s.emit(StatusChanged())
        return got
