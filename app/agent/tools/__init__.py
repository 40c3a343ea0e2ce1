"""Built-in tools. All seven are on unless config.toml's `tools` or `--tools read,ls,…` names fewer
(config.settings.DEFAULT_TOOLS); bash, edit and write ask before they act; task starts a sub-agent."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .base import AgentTool, AnyTool, FunctionTool, ToolResult, text_result
from .bash import BashTool, Confirm
from .bash_tracked import TrackedBashTool
from .changes import ApproveChange, FileRecorder, ProposedChange
from .edit import EditTool, WriteTool, approve_inside
from .files import GrepTool, LsTool, ReadTool
from .host import CommandHost, CommandRun, FileHost, HostError
from .reach import Reach, ReadConfirm, working_folder
from .task import SpawnChild, TaskArgs, TaskTool

BUILTIN_TOOLS = ("read", "ls", "grep", "bash", "edit", "write", "task")


class UnknownToolError(ValueError):
    pass


def parse_tool_names(spec: str | Iterable[str] | None) -> list[str]:
    """'read,ls' or ['read', 'ls'] -> validated names (raises with the list of known tools)."""
    if spec is None:
        return []
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    unknown = [n for n in names if n not in BUILTIN_TOOLS]
    if unknown:
        raise UnknownToolError(f"Unknown tool {unknown[0]!r}; the built-in tools are {', '.join(BUILTIN_TOOLS)}.")
    return list(dict.fromkeys(names))


def make_tools(names: Iterable[str], *, cwd: str | os.PathLike[str] | None = None,
               confirm: Confirm | None = None, reach: Reach | None = None,
               approve: ApproveChange | None = None, recorder: FileRecorder | None = None,
               writable_git_paths: Iterable[str] = (), files: FileHost | None = None,
               commands: CommandHost | None = None, env: dict[str, str] | None = None,
               spawn: SpawnChild | None = None) -> list[AnyTool]:
    """`reach`: where read, ls and grep may look without asking (default: the folder `cwd`, and
    nothing outside it); `approve`: asked before edit and write change a file (None: they refuse);
    `recorder`: the checkpoints of what edit, write and bash change (None: nothing is recorded);
    `writable_git_paths`: the files in git's own folders edit and write may change (config.toml);
    `files`, `commands`: an editor that serves the files read, edit and write use, and runs
    bash's commands (host.py; None: here); `env`: the environment of what bash and grep start here
    (None: this process's without its secrets, app/config/tool_env.py); `spawn`: what runs a
    `task` call's sub-agent (the controller's; None: task says it cannot run here)."""
    reach = reach or Reach.of(cwd or os.getcwd())
    bash = (BashTool(cwd, confirm, commands, env=env) if recorder is None
            else TrackedBashTool(cwd, confirm, recorder, commands, env=env))
    made: dict[str, AnyTool] = {"read": ReadTool(cwd, reach, files), "ls": LsTool(cwd, reach),
                                  "grep": GrepTool(cwd, reach, env=env), "bash": bash,
                                  "edit": EditTool(cwd, approve, recorder, writable_git_paths, files),
                                  "write": WriteTool(cwd, approve, recorder, writable_git_paths, files),
                                  "task": TaskTool(spawn)}
    return [made[n] for n in parse_tool_names(list(names))]


__all__ = ["AgentTool", "FunctionTool", "ToolResult", "text_result", "BashTool", "ReadTool", "LsTool", "GrepTool",
           "EditTool", "WriteTool", "approve_inside", "ApproveChange", "FileRecorder", "ProposedChange",
           "BUILTIN_TOOLS", "make_tools", "parse_tool_names", "UnknownToolError", "Reach", "ReadConfirm",
           "working_folder", "FileHost", "CommandHost", "CommandRun", "HostError", "SpawnChild", "TaskArgs", "TaskTool"]
