"""`treechat context`: the system prompt a request in a session would carry, and the JSON written."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treechat.session.context import SessionContext


def context_system_prompt(home: str | None, tools: str | None, active_tools: list[str] | None, cwd: str,
                          instructions: str | None) -> str:
    """The system prompt a request in this session would carry: its tools (`tools`, else the
    configured ones, narrowed by what the path records: chat/tool_set.py), its folder (`cwd`: where the session was started, when that folder still
    exists, not where this command runs), the AGENTS.md files seen from there, config
    `system_prompt`, and `instructions` (`--system`, else what `/system` stored on the path).
    A bad config.toml or tool list raises ConfigError / ValueError."""
    from ..agent.tools import BUILTIN_TOOLS, make_tools, parse_tool_names
    from ..config.settings import load_settings
    from ..prompts.extensions import skills_section
    from ..session.system_prompt import SystemPromptBuilder

    settings = load_settings(home)
    names = parse_tool_names(tools if tools is not None else settings.tools)  # narrowed by the path's record
    made = make_tools([n for n in names if n in BUILTIN_TOOLS and (active_tools is None or n in active_tools)], cwd=cwd)
    builder = SystemPromptBuilder.from_settings(settings, cwd=cwd, instructions=instructions)
    builder.skills = skills_section(cwd, settings.config_file.parent, settings.env)  # as the app lists them
    return builder.build(made)


def context_json(ctx: SessionContext, system_prompt: str) -> str:
    """`{messages, thinkingLevel, model, activeToolNames, systemPrompt}`, one message per line, each
    serialized by pydantic in one call (a 20k-message context in a fraction of a second; json.dumps
    with indent runs its pure-Python encoder over every value)."""
    out = [json.dumps(v, ensure_ascii=False) for v in (ctx.thinking_level, ctx.model, ctx.active_tool_names, system_prompt)]
    lines = ",\n    ".join(m.model_dump_json(by_alias=True, exclude_unset=True) for m in ctx.messages)
    return ('{\n  "messages": [' + ("\n    " + lines + "\n  ]" if lines else "]") + ',\n  "thinkingLevel": '
            + out[0] + ',\n  "model": ' + out[1] + ',\n  "activeToolNames": ' + out[2]
            + ',\n  "systemPrompt": ' + out[3] + "\n}\n")
