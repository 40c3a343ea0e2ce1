"""The system prompt every request carries: what the agent is, its tools, where it works, the
date, the person's own instructions and the project's context files (AGENTS.md / CLAUDE.md).

`SystemPromptBuilder` holds what does not change between requests (the working folder, the
instructions, the context files, read once) and renders the text for a list of tools, so a tool
change or `/system TEXT` is a cheap rebuild. `bind_system_prompt(asession, builder)` keeps a live
AgentSession's prompt current when its active tools change or its leaf moves.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from treechat.agent.tools import BashTool, EditTool, GrepTool, LsTool, ReadTool, TaskTool, WriteTool
from treechat.agent.tools.base import AnyTool
from treechat.prompts.context_files import ContextFile, find_context_files
from treechat.prompts.outside import ReadsOutside

from .events import SessionEvent

if TYPE_CHECKING:
    from treechat.config.settings import Settings

    from .agent_session import AgentSession

INTRO = (
    "You are the assistant in treechat, a terminal chat app in which a person works with an AI model. "
    "The conversation is a tree: the person can go back to an earlier message and branch from it, and "
    "older parts may have been compacted into a summary, so refer to what is in front of you rather than "
    "to messages you cannot see. Answer in Markdown; be direct and concise, and say so when you are unsure."
)

# what a sub-agent (the task tool's child) is told after INTRO: its caller sees only its last message
SUB_AGENT = (
    "# Your part\n\nYou are a sub-agent: another agent handed you the task in the first message and sees only "
    "your final message, none of your tool calls or other messages. Do the task with your tools, then end with "
    "one message that is the whole answer it needs: what you found or changed (with file paths), and anything "
    "you could not do. The person can see your work and answers your tools' questions; you cannot ask them "
    "anything else."
)

NO_TOOLS = (
    "No tools are enabled in this conversation: you cannot look at files or run commands yourself. "
    "Work from what is in the conversation and ask the person for anything else you need."
)

# How to use each built-in tool well; any other tool is listed with its own description only.
BUILTIN_TOOL_TYPES = (ReadTool, LsTool, GrepTool, BashTool, EditTool, WriteTool, TaskTool)
TOOL_GUIDES = {
    "read": "Use it to look at a file instead of guessing what it says.",
    "ls": "Use it to find your way around a folder.",
    "grep": "Use it to find where something is defined or used.",
    "bash": ("The person approves each command, so say briefly why you need it; prefer read, ls and grep "
             "(when enabled) for looking at files."),
    "edit": ("The person sees each change as a diff and approves it. Read the file first; copy oldText exactly "
             "from it, with enough context to be unique; prefer edit to rewriting a whole file with write."),
    "write": ("For new files, or to replace a file whole; the person approves each change. Changes outside the "
              "working folder are refused unless the person allows them."),
    "task": ("Give each sub-agent one clear, self-contained job; call task several times in one reply for "
             "independent jobs, and check what they report before you rely on it."),
}


MAX_OTHER_DESCRIPTION = 300


def _os_name() -> str:
    system = platform.system() or "unknown OS"
    if system == "Darwin":
        version = platform.mac_ver()[0]
        return f"macOS {version}".strip()
    if system == "Linux":
        try:
            release = platform.freedesktop_os_release().get("PRETTY_NAME")
        except OSError:
            release = None
        return f"Linux, {release}" if release else f"Linux {platform.release()}"
    return f"{system} {platform.release()}".strip()


def _shell() -> str:
    return os.environ.get("SHELL") or os.environ.get("COMSPEC") or "/bin/sh"


@dataclass(frozen=True)
class Environment:
    cwd: str
    today: date
    os_name: str
    shell: str

    @classmethod
    def current(cls, cwd: str | os.PathLike[str] | None = None) -> Environment:
        return cls(cwd=str(Path(cwd or os.getcwd()).resolve()), today=date.today(), os_name=_os_name(), shell=_shell())


def _tool_lines(tools: Sequence[AnyTool]) -> str:
    lines = []
    for tool in tools:
        guide = TOOL_GUIDES.get(tool.name) if isinstance(tool, BUILTIN_TOOL_TYPES) else None
        description = " ".join(tool.description.split())
        if guide is None and len(description) > MAX_OTHER_DESCRIPTION:  # (an MCP tool's: its schema says the rest)
            description = description[: MAX_OTHER_DESCRIPTION - 1] + "…"
        text = " ".join(t for t in (description, guide) if t)
        lines.append(f"- {tool.name}: {text}" if text else f"- {tool.name}")
    return "\n".join(lines)


def build_system_prompt(
    *,
    tools: Sequence[AnyTool] = (),
    environment: Environment,
    instructions: Iterable[str] = (),
    context_files: Sequence[ContextFile] = (),
    skills: str = "",
    sub_agent: bool = False,
) -> str:
    """The whole system prompt. `tools` are the active AgentTools (name, description);
    `instructions` the person's own text (config `system_prompt`, `--system`, `/system`);
    `sub_agent`: for a task tool's child (it answers another agent)."""
    parts = [INTRO, SUB_AGENT] if sub_agent else [INTRO]
    if tools:
        parts.append(
            "# Tools\n\nYou can call these tools; call them whenever they help instead of guessing, and "
            "read their results before you answer. Paths are relative to the working folder.\n\n"
            + _tool_lines(tools)
        )
    else:
        parts.append(NO_TOOLS)
    if skills and any(t.name == "read" for t in tools):  # (Pi: the model reads a skill's file)
        parts.append(skills)
    env = environment
    parts.append(
        "# Environment\n\n"
        f"- Working folder: {env.cwd}\n"
        f"- Today's date: {env.today.isoformat()} ({env.today.strftime('%A')})\n"
        f"- Operating system: {env.os_name}\n"
        f"- Shell: {env.shell}"
    )
    own = [t.strip() for t in instructions if t and t.strip()]
    if own:
        parts.append("# Instructions from the person\n\nFollow these; they override the guidance above.\n\n"
                     + "\n\n".join(own))
    if context_files:
        blocks = [f"## {f.path}\n\n{f.text.strip()}" for f in context_files]
        parts.append(
            "# Project context\n\nInstructions from the project's context files, outermost first (later, "
            "more specific files win where they disagree).\n\n" + "\n\n".join(blocks)
        )
    return "\n\n".join(parts) + "\n"


@dataclass
class SystemPromptBuilder:
    """Everything the prompt needs except the tools. `config_instructions` comes from config.toml's
    `system_prompt`, `instructions` from `--system` or `/system TEXT` (None: not set)."""

    cwd: str
    global_dir: str | None = None
    config_instructions: str | None = None
    instructions: str | None = None
    load_context_files: bool = True
    skills: str = ""  # the Agent Skills section (skills.skills_listing), listed when the read tool is on
    # a context file outside the working folder (a link out) is read only when allowed here
    outside: ReadsOutside | None = None
    _files: list[ContextFile] | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings, *, cwd: str | os.PathLike[str] | None = None,
                      instructions: str | None = None) -> SystemPromptBuilder:
        """From config.toml's settings (its folder is the global context-file folder)."""
        return cls(
            cwd=str(cwd or os.getcwd()),
            global_dir=str(Path(settings.config_file).parent),
            config_instructions=settings.system_prompt,
            instructions=instructions,
        )

    @property
    def context_files(self) -> list[ContextFile]:
        if self._files is None:
            if self.outside is None:
                self.outside = ReadsOutside.for_cwd(self.cwd)  # nothing outside, unless the controller's allows it
            self._files = find_context_files(self.cwd, self.global_dir, outside=self.outside) if (
                self.load_context_files) else []
        return self._files

    def forget_files(self) -> None:
        """Look for the context files again at the next build (a read outside was allowed)."""
        self._files = None

    def build(self, tools: Sequence[AnyTool] = (), *, sub_agent: bool = False, folder: str | None = None) -> str:
        """`folder`: where the agent works, when not `cwd` (a run's own git worktree)."""
        return build_system_prompt(
            tools=tools,
            environment=Environment.current(folder or self.cwd),
            instructions=[t for t in (self.config_instructions, self.instructions) if t],
            context_files=self.context_files,
            skills=self.skills,
            sub_agent=sub_agent,
        )


def bind_system_prompt(asession: AgentSession, builder: SystemPromptBuilder,
                       folder: str | None = None) -> Callable[[], str]:
    """Set `asession`'s system prompt now and rebuild it whenever its active tools change or the
    transcript is rebuilt (a leaf move can restore other tools). Returns `refresh()`, which
    rebuilds on demand (after `/system TEXT` changed `builder.instructions`, or before a prompt
    on a day that has changed) and returns the new text."""

    def refresh() -> str:
        text = builder.build(list(asession.state.tools), folder=folder)
        asession.agent.state.system_prompt = text
        return text

    def on_event(event: SessionEvent) -> None:
        if event.type in ("active_tools_changed", "session_reloaded"):
            refresh()

    asession.subscribe(on_event)
    refresh()
    return refresh
