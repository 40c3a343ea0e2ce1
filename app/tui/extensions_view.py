"""The app's side of MCP servers, skills and prompt templates (the rules are the controller's).

After the first frame: a project's `.mcp.json` is asked about once (a dialog typing cannot answer;
the answer is kept in state.json for the file as it is), then the servers start in the background
and the skills and templates are found (their problems are one warning). A prompt template or
`/skill NAME text` typed in the composer is sent as the message it stands for (Enter while a reply
runs steers it, Alt+Enter queues it); Tab completes command names, templates included. An MCP
call is confirmed in the bash tool's dialog unless its server is trusted; `a` allows that tool for
the rest of the session.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treechat.widgets.composer.view import Composer

from .base import TuiBase
from .registry import command

if TYPE_CHECKING:
    from treechat.chat.state import SendKind

# The questions' panel (treechat.widgets.question) loads on first use: this module is part of the
# App, whose first frame is drawn before it (app/tui/starting.py).

QUIET_BEFORE_ASKING = 1.5  # seconds without a key before the trust question shows
F1_DESCRIPTION = 200  # characters of a template's or skill's description in F1


@dataclass(frozen=True)
class SlashCompletion:
    start: int
    end: int
    replacement: str
    candidates: list[str]


class ExtensionsView(TuiBase):
    allowed_tools: set[tuple[str, str]]

    async def start_extensions(self) -> None:
        """After the first frame: the trust question (if any), the MCP servers, the skills and
        templates, and Tab completion of command names."""
        self.allowed_tools = set()
        self.chat.confirm_tool = self.confirm_mcp_call
        composer = self.composer
        paths = composer.completer
        composer.completer = lambda text, cursor: self.complete_command(text, cursor) or (
            paths(text, cursor) if paths is not None else None)
        self.chat.load_extensions()
        self.chat.start_mcp()  # config.toml's servers, and the project's when trusted before
        if self.chat.project_mcp()[1] == "ask":
            self.run_worker(self.ask_project_trust(), group="mcp")

    async def ask_project_trust(self) -> None:
        from treechat.widgets.question.panel import QuestionSpec

        found, _ = self.chat.project_mcp()
        if found is None or not found.servers:
            return
        # A question nobody asked for waits until the person is not typing (it would appear in the
        # typing state, asking for Esc first: app/tui/questions.py).
        asked_at = time.monotonic()
        # (a quiet time, not a condition to wait on: it sleeps until the last key is that old)
        while (left := QUIET_BEFORE_ASKING - (time.monotonic() - max(getattr(self, "last_key_at", 0.0), asked_at))) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        body = self.chat.describe_project_mcp()
        spec = QuestionSpec("Start this project's MCP servers?", body, yes="Start them", no="Never",
                            session="This time only", escape="later",
                            keys="y starts them (and remembers) · a starts them this time · n never for this file · "
                                 "Esc not now")
        answer = await self.questions.ask(spec)
        if answer == "yes":
            self.chat.trust_project("trusted")
        elif answer == "no":
            self.chat.trust_project("refused")
        if answer in ("yes", "session"):
            self.chat.allow_project_mcp()

    async def confirm_mcp_call(self, server: str, tool: str, arguments: str) -> bool:
        """Before an untrusted server's tool runs (asked like a shell command), unless that tool
        was allowed for this session."""
        from treechat.widgets.question.panel import QuestionSpec

        allowed = (self.chat.session_id, tool)
        if allowed in self.allowed_tools:
            return True
        spec_ = next((s for s in self.chat.mcp.specs if s.name == server), None)
        where = f"{spec_.where} ({spec_.origin})" if spec_ is not None else server
        spec = QuestionSpec(f"Let the model call {tool}?", f"MCP server {server}: {where}\n\n{arguments}",
                            yes="Run", no="Refuse", session="Allow this tool for this session")
        answer = await self.questions.ask(spec)
        if answer == "session":
            self.allowed_tools.add(allowed)
        return answer in ("yes", "session")

    # ------------------------------------------------------------ templates and skills

    async def send_expanded(self, message: Composer.Command) -> bool:
        """A prompt template (`/review foo.py`) or `/skill NAME text`: sent as a message. False
        for anything else (a built-in command, an unknown word)."""
        name = message.name
        is_skill = name == "skill" and bool(message.args.strip())
        if not is_skill and (name in self.slash_commands or self.chat.extensions.template(name) is None):
            return False
        kind: SendKind = "follow_up" if message.kind == "follow_up" else "steer" if message.kind == "steer" else "send"
        await self.send_text(message.text, kind, expand=True)
        return True

    @command("skill", title="Use a skill", args="[NAME] [text]",
             help="a skill's instructions go into your message (no name: list skills and prompt templates)",
             complete=lambda chat: [s.name for s in chat.extensions.skills])
    async def cmd_skill(self, args: str) -> None:
        from treechat.widgets.screens import TextDialog

        if args.strip():  # from the palette with arguments: as if typed
            text = f"/skill {args}"
            await self.send_expanded(Composer.Command("skill", args, text))
            return
        self.push_screen(TextDialog("Skills and prompt templates", self.chat.extensions_text()))

    @command("mcp", title="MCP servers", args="[restart NAME]", help="each server: its state, its tools, its last error",
             complete=lambda chat: [*(f"restart {s.name}" for s in chat.mcp.specs), "trust"])
    async def cmd_mcp(self, args: str) -> None:
        from treechat.widgets.screens import TextDialog

        words = args.split()
        if words[:1] == ["restart"] and len(words) == 2:
            self.notify(f"Restarting MCP server {words[1]}…", timeout=3)
            text = await self.attempt(_restart(self, words[1]))
            if text is not None:
                self.push_screen(TextDialog("MCP servers", text, follow=self.chat.mcp_text))
            return
        if words == ["trust"]:
            self.questions.handed_over()  # asked for: the answer may come at once
            self.run_worker(self.ask_project_trust(), group="mcp")
            return
        if words:
            self.show_error("/mcp shows the servers; /mcp restart NAME starts one again; /mcp trust asks again "
                            "about this project's .mcp.json.")
            return
        self.push_screen(TextDialog("MCP servers", self.chat.mcp_text(), follow=self.chat.mcp_text))

    def extensions_help(self) -> str:
        """F1's part about what was found: the templates (with their descriptions) and skills."""
        ext = self.chat.extensions
        out = []
        if ext.templates:
            out += ["## Prompt templates", ""]
            out += [f"- `/{t.name}{' ' + t.argument_hint if t.argument_hint else ''}` — {_cell(t.description)}"
                    for t in ext.templates]
            out.append("")
        if ext.skills:
            out += ["## Skills", "", "`/skill NAME [text]` puts one into your message.", ""]
            out += [f"- `{s.name}` — {_cell(s.description)}" for s in ext.skills]
            out.append("")
        return "\n".join(out)

    def complete_command(self, text: str, cursor: int) -> SlashCompletion | None:
        """Tab at the start of the composer: after `/na` the command names (templates too), after
        `/name ar` what that command's registration offers for its arguments (registry.py)."""
        head = text[:cursor]
        if not head.startswith("/") or head.startswith("//") or "\n" in head:
            return None
        name, space, typed = head[1:].partition(" ")
        if space:
            start = cursor - len(typed)
            return _completion(start, cursor, typed, self.argument_choices(name.lower(), self.chat), prefix="")
        names = sorted({*self.slash_commands, *(t.name for t in self.chat.extensions.templates)})
        return _completion(0, cursor, name.lower(), names, prefix="/")


def _cell(text: str) -> str:
    """A description in F1's list: one line, cut (a skill's may be 1,024 characters, and there may be hundreds)."""
    line = " ".join(text.split())
    return line if len(line) <= F1_DESCRIPTION else line[: F1_DESCRIPTION - 1] + "…"


def _completion(start: int, end: int, typed: str, choices: list[str], *, prefix: str) -> SlashCompletion | None:
    """The one match and a space, or the common part of several (listed under the box)."""
    matches = [c for c in choices if c.lower().startswith(typed.lower())]
    if not matches:
        return None
    if len(matches) == 1:
        return SlashCompletion(start, end, f"{prefix}{matches[0]} ", [f"{prefix}{matches[0]}"])
    common = matches[0]
    for m in matches[1:]:
        while not m.lower().startswith(common.lower()):
            common = common[:-1]
    return SlashCompletion(start, end, f"{prefix}{common}", [f"{prefix}{m}" for m in matches])


async def _restart(view: ExtensionsView, name: str) -> str:
    from treechat.chat import ChatError
    from treechat.prompts.extensions import CommandError

    try:
        return await view.chat.restart_mcp(name)
    except CommandError as err:
        raise ChatError(str(err)) from None
