"""The app's side of MCP servers, skills and prompt templates (the rules are the controller's).

After the first frame: a project's `.mcp.json` is asked about once (a question typing cannot
answer; the answer is kept in state.json for the file as it is), then the servers start in the
background and the skills and templates are found (their problems are one warning). A prompt
template or `/skill NAME text` typed in the composer is sent as the message it stands for (Enter
while a reply runs steers it, Alt+Enter queues it); Tab completes command names, templates
included (`completion.py`). An MCP call is confirmed like a shell command unless its server is
trusted; `a` allows that tool for the rest of the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from ..registry import command
from .completion import SlashCompletion, complete

if TYPE_CHECKING:
    from treechat.chat.state import SendKind

    from ..registry import Command
    from ..shell import Shell

# The questions' panel (treechat.widgets.question) loads on first use, like this feature: after the
# App's first frame (app/tui/startup/).

QUIET_BEFORE_ASKING = 1.5  # seconds without a key before the trust question shows
F1_DESCRIPTION = 200  # characters of a template's or skill's description in F1


class Sender(Protocol):
    async def send_text(self, text: str, kind: SendKind, *, expand: bool = False) -> None:
        """Send `text` (a template or `/skill` expanded with `expand`) as the composer would."""
        ...


class Extensions:
    def __init__(self, shell: Shell, sender: Sender, commands: Mapping[str, Command]) -> None:
        self.shell, self.sender, self.commands = shell, sender, commands
        self.allowed_tools: set[tuple[str, str]] = set()  # (session id, tool): "allow for this session"

    def start(self) -> None:
        """After the first frame: the trust question (if any), the MCP servers, the skills and
        templates, and Tab completion of command names."""
        chat = self.shell.chat
        chat.confirm_tool = self.confirm_mcp_call
        composer = self.shell.composer
        paths = composer.completer
        composer.completer = lambda text, cursor: self.complete_command(text, cursor) or (
            paths(text, cursor) if paths is not None else None)
        chat.load_extensions()
        chat.start_mcp()  # config.toml's servers, and the project's when trusted before
        if chat.project_mcp()[1] == "ask":
            self.shell.run_worker(self.ask_project_trust(), group="mcp")

    async def ask_project_trust(self) -> None:
        from treechat.widgets.question.panel import QuestionSpec

        chat = self.shell.chat
        found, _ = chat.project_mcp()
        if found is None or not found.servers:
            return
        # A question nobody asked for waits until the person is not typing (it would appear in the
        # typing state, asking for Esc first: app/tui/questions/).
        asked_at = time.monotonic()
        # (a quiet time, not a condition to wait on: it sleeps until the last key is that old)
        while (left := QUIET_BEFORE_ASKING - (time.monotonic() - max(self.shell.last_key_at, asked_at))) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        body = chat.describe_project_mcp()
        spec = QuestionSpec("Start this project's MCP servers?", body, yes="Start them", no="Never",
                            session="This time only", escape="later",
                            keys="y starts them (and remembers) · a starts them this time · n never for this file · "
                                 "Esc not now")
        answer = await self.shell.questions.ask(spec)
        if answer == "yes":
            chat.trust_project("trusted")
        elif answer == "no":
            chat.trust_project("refused")
        if answer in ("yes", "session"):
            chat.allow_project_mcp()

    async def confirm_mcp_call(self, server: str, tool: str, arguments: str) -> bool:
        """Before an untrusted server's tool runs (asked like a shell command), unless that tool
        was allowed for this session."""
        from treechat.widgets.question.panel import QuestionSpec

        chat = self.shell.chat
        allowed = (chat.session_id, tool)
        if allowed in self.allowed_tools:
            return True
        spec_ = next((s for s in chat.mcp.specs if s.name == server), None)
        where = f"{spec_.where} ({spec_.origin})" if spec_ is not None else server
        spec = QuestionSpec(f"Let the model call {tool}?", f"MCP server {server}: {where}\n\n{arguments}",
                            yes="Run", no="Refuse", session="Allow this tool for this session")
        answer = await self.shell.questions.ask(spec)
        if answer == "session":
            self.allowed_tools.add(allowed)
        return answer in ("yes", "session")

    # ------------------------------------------------------------ templates and skills

    async def send_expanded(self, name: str, args: str, text: str, kind: SendKind) -> bool:
        """A prompt template (`/review foo.py`) or `/skill NAME text`: sent as a message. False
        for anything else (a built-in command, an unknown word)."""
        is_skill = name == "skill" and bool(args.strip())
        if not is_skill and (name in self.commands or self.shell.chat.extensions.template(name) is None):
            return False
        await self.sender.send_text(text, kind, expand=True)
        return True

    @command("skill", title="Use a skill", args="[NAME] [text]",
             help="a skill's instructions go into your message (no name: list skills and prompt templates)",
             complete=lambda chat: [s.name for s in chat.extensions.skills])
    async def cmd_skill(self, args: str) -> None:
        from treechat.widgets.screens import TextDialog

        if args.strip():  # from the palette with arguments: as if typed
            await self.send_expanded("skill", args, f"/skill {args}", "send")
            return
        self.shell.show(TextDialog("Skills and prompt templates", self.shell.chat.extensions_text()))

    @command("mcp", title="MCP servers", args="[restart NAME]", help="each server: its state, its tools, its last error",
             complete=lambda chat: [*(f"restart {s.name}" for s in chat.mcp.specs), "trust"])
    async def cmd_mcp(self, args: str) -> None:
        from treechat.widgets.screens import TextDialog

        chat = self.shell.chat
        words = args.split()
        if words[:1] == ["restart"] and len(words) == 2:
            self.shell.notify(f"Restarting MCP server {words[1]}…", timeout=3)
            text = await self.shell.attempt(self._restart(words[1]))
            if text is not None:
                self.shell.show(TextDialog("MCP servers", text, follow=chat.mcp_text))
            return
        if words == ["trust"]:
            self.shell.questions.handed_over()  # asked for: the answer may come at once
            self.shell.run_worker(self.ask_project_trust(), group="mcp")
            return
        if words:
            self.shell.show_error("/mcp shows the servers; /mcp restart NAME starts one again; /mcp trust asks again "
                                  "about this project's .mcp.json.")
            return
        self.shell.show(TextDialog("MCP servers", chat.mcp_text(), follow=chat.mcp_text))

    async def _restart(self, name: str) -> str:
        from treechat.chat import ChatError
        from treechat.prompts.extensions import CommandError

        try:
            return await self.shell.chat.restart_mcp(name)
        except CommandError as err:
            raise ChatError(str(err)) from None

    def extensions_help(self) -> str:
        """F1's part about what was found: the templates (with their descriptions) and skills."""
        ext = self.shell.chat.extensions
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
        chat = self.shell.chat
        return complete(text, cursor, self.commands, [t.name for t in chat.extensions.templates], chat)


def _cell(text: str) -> str:
    """A description in F1's list: one line, cut (a skill's may be 1,024 characters, and there may be hundreds)."""
    line = " ".join(text.split())
    return line if len(line) <= F1_DESCRIPTION else line[: F1_DESCRIPTION - 1] + "…"
