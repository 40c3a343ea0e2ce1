"""The controller's extensions (issue 24): MCP servers, Agent Skills and prompt templates.

`Extras` is the controller's role for them (`treechat mcp` uses it on its own): it owns the MCP manager
(started by the front end: the app after its first frame, `-p` before its prompt), a project's
`.mcp.json` and its trust, and the skills and templates (found on first need). Front ends read
what is there (`mcp_text`, `command_rows`, `extensions_text`) and the rules are here, so the app
and `-p` expand `/review x` and `/skill NAME` the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from treechat.chat.events import Change, ChatEvent, Notice, StatusChanged
from treechat.mcp.config import ProjectServers, config_servers, find_project_file, read_project_servers
from treechat.mcp.manager import McpManager, format_rows
from treechat.mcp.trust import TrustAnswer, binding, describe, remember_trust, remembered_trust
from treechat.prompts.extensions import CommandError, Extensions, expand_command, listing, load_extensions, template_of
from treechat.prompts.outside import ReadsOutside, Undecided

if TYPE_CHECKING:
    from treechat.agent.tools import ReadConfirm
    from treechat.agent.tools.base import AnyTool
    from treechat.config.settings import Settings
    from treechat.mcp.tools import ConfirmCall
    from treechat.session.agent_session import AgentSession
    from treechat.session.system_prompt import SystemPromptBuilder
    from treechat.widgets.commands import SlashCommand

ProjectTrust = Literal["trusted", "refused", "ask", "none"]


class ExtrasHost(Protocol):
    """What the extensions read of the chat (`ChatState`; `treechat mcp` has its own, without a session)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def cwd(self) -> str: ...
    @property
    def prompt_builder(self) -> SystemPromptBuilder | None: ...
    @property
    def outside(self) -> ReadsOutside: ...
    @property
    def confirm_read(self) -> ReadConfirm | None: ...
    @property
    def agent(self) -> AgentSession | None: ...
    @property
    def tool_names(self) -> list[str]: ...
    def offer_mcp_tools(self, mcp_tools: Sequence[AnyTool]) -> None: ...
    def emit(self, event: ChatEvent | Change) -> None: ...


class Extras:
    def __init__(self, s: ExtrasHost) -> None:
        self.s = s
        self.confirm_tool: ConfirmCall | None = None  # asks before an MCP tool runs (None: refuse untrusted calls)
        self.mcp = McpManager(config_servers(self.s.settings.mcp_servers, self.s.settings.mcp_timeout), cwd=self.s.cwd,
                              env=dict(self.s.settings.env), on_change=self._mcp_changed,
                              confirm=lambda: self.confirm_tool)
        self.project: ProjectServers | None = None
        self._project_binding: str | None = None  # what an answer about it is given for (trust.binding)
        self._extensions: Extensions | None = None
        # the front end's own slash commands: a template is not found under one of their names (it
        # could not be typed); the TUI sets them before the templates are first looked for
        self.builtin_commands: frozenset[str] = frozenset()
        self._told_starting = False
        self._said_bound: str | None = None

    # ------------------------------------------------------------ MCP servers

    @property
    def loaded(self) -> bool:
        """The skills and templates were looked for (the composer's Tab completion lists them from then)."""
        return self._extensions is not None

    def project_mcp(self) -> tuple[ProjectServers | None, ProjectTrust]:
        if self.project is None:
            path = find_project_file(self.s.cwd)
            if path is None:
                return None, "none"
            self.project = read_project_servers(path, self.s.settings.mcp_timeout)
        found = self.project
        if not found.servers:
            return found, "none"
        if self._project_binding is None:  # (once: the scripts are read and hashed, bounded)
            self._project_binding = binding(found, self.s.cwd, self.s.settings.env)
        answer = remembered_trust(self.s.settings.home, found, self._project_binding)
        return found, "trusted" if answer == "trusted" else "refused" if answer == "refused" else "ask"

    def describe_project_mcp(self) -> str:
        found, _ = self.project_mcp()
        return describe(found, self.s.cwd, self.s.settings.env) if found is not None and found.servers else ""

    def trust_project(self, answer: TrustAnswer) -> None:
        found, _ = self.project_mcp()
        if found is not None and found.servers and self._project_binding is not None:
            remember_trust(self.s.settings.home, found, self._project_binding, answer)

    def start_mcp(self, *, project: bool | None = None) -> None:
        found, trust = self.project_mcp()
        if found is not None:
            new = [p for p in found.problems if p not in self.mcp.problems]
            self.mcp.problems += new
            if new:  # (a .mcp.json that cannot be read: one warning, /mcp lists every line)
                more = f" (and {len(new) - 1} more: /mcp lists them)" if len(new) > 1 else ""
                self.s.emit(Notice(f"{new[0]}{more}", "warning"))
            use = trust == "trusted" if project is None else project
            taken = {s.name for s in self.mcp.specs}
            if use:
                self.mcp.add([s for s in found.servers if s.name not in taken])
            else:
                self.mcp.untrusted = [s for s in found.servers if s.name not in taken]
                if trust == "refused":
                    self.mcp.untrusted_note = "you chose never for this .mcp.json (/mcp trust asks again)"
        self.mcp.start()

    def allow_project_mcp(self) -> None:
        self.mcp.add(list(self.mcp.untrusted))

    async def restart_mcp(self, name: str) -> str:
        if not await self.mcp.restart(name):
            known = ", ".join(self.mcp.servers) or "none is running"
            raise CommandError(f"No MCP server {name!r} to restart ({known}).")
        return self.mcp_text()

    def mcp_text(self) -> str:
        return format_rows(self.mcp.rows(), self.mcp.listing_problems())

    def _mcp_changed(self, line: str | None) -> None:
        """A server started, stopped or listed new tools: the agent is offered the new set."""
        self.s.offer_mcp_tools(self.mcp.tools())
        self.s.emit(StatusChanged())  # the tools it counts
        if line:
            self.s.emit(Notice(line, "information" if line.endswith("running again.") else "warning"))
        bound = self.mcp.all_bound_note()
        if bound != self._said_bound:  # the bound on every server's tools together: said when it changes
            self._said_bound = bound
            if bound:
                self.s.emit(Notice(bound, "warning"))

    def say_starting(self) -> None:
        """A message that goes out while servers start goes without their tools: say so once."""
        starting = self.mcp.starting
        if starting and not self._told_starting:
            self._told_starting = True
            names = ", ".join(repr(n) for n in starting)
            self.s.emit(Notice(f"MCP server{'s' if len(starting) > 1 else ''} {names} still starting: "
                              "its tools join from your next message."))

    # ------------------------------------------------------------ skills and prompt templates

    @property
    def extensions(self) -> Extensions:
        """The skills and templates, found on first need (their problems are one warning)."""
        if self._extensions is None:
            config_dir = Path(self.s.settings.config_file).parent if self.s.settings.config_file else None
            self._extensions = load_extensions(self.s.cwd, config_dir, self.s.settings.env, set(self.builtin_commands),
                                               self.s.outside)
            if self.s.prompt_builder is not None:
                self.s.prompt_builder.skills = self._extensions.prompt_section.text
            line = self._extensions.problems_line()
            if line:
                self.s.emit(Notice(line, "warning"))
        return self._extensions

    def load_extensions(self) -> None:
        """Find the skills and templates now (the system prompt lists the skills)."""
        self.extensions  # noqa: B018 - the property loads them

    async def expand(self, text: str) -> str:
        """`/TEMPLATE args`, `/skill NAME text` and `//x` as they go out; other text as it is. A
        project's template or skill outside the working folder is asked about first."""
        from treechat.chat.errors import ChatError

        for _ in range(2):
            try:
                return expand_command(text, self.extensions)
            except CommandError as err:
                raise ChatError(str(err)) from None
            except Undecided:
                await self.ask_outside()
        raise ChatError("A file this command reads moved outside the working folder while you were asked; try again.")

    async def ask_outside(self) -> None:
        """Ask about the files read for the repository that lead outside the working folder
        (`confirm_read`: the read tool's question; None: refused); what was allowed is read again."""
        if await self.s.outside.ask(self.s.confirm_read):
            if self.s.prompt_builder is not None:
                self.s.prompt_builder.forget_files()
            if self._extensions is not None:
                self._extensions = None
                self.extensions  # noqa: B018 - the property loads them again (the skills the prompt lists)

    async def vet_project_files(self) -> None:
        """Before the system prompt is made: find the context files and skills, and ask about
        those that lead outside the working folder."""
        if self.s.prompt_builder is not None:
            self.s.prompt_builder.context_files  # noqa: B018 - found now: what leads out is pending
        self.load_extensions()
        if self.s.outside.pending:
            await self.ask_outside()

    def template_of(self, text: str) -> str | None:
        """The template `text` calls (`/review foo.py`: "review"), None for anything else."""
        return template_of(text, self.extensions)

    def command_rows(self) -> list[SlashCommand]:
        from treechat.widgets.commands import SlashCommand

        return [SlashCommand(t.name, f"Template: {t.name}", t.argument_hint or "[arguments]",
                             t.description or f"the prompt in {t.path.name}") for t in self.extensions.templates]

    def extensions_text(self) -> str:
        announced = any(t.name == "read" for t in self.s.agent.state.tools) if self.s.agent is not None else (
            "read" in self.s.tool_names)
        return listing(self.extensions, announced)


__all__ = ["Extras", "ExtrasHost", "ProjectTrust"]
