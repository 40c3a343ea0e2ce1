"""What the agent asks before it acts outside its bounds: a shell command (bash), a read outside
the working folder (read, ls, grep). Each is a question above the composer (`asking.py`: typing
cannot answer it), unless that exact command or path was allowed for this session."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treechat.widgets.question.panel import QuestionSpec

    from ..shell import Shell


class Permissions:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.allowed_commands: set[tuple[str, str]] = set()  # (session id, command or path): "allow for this session"

    async def confirm_command(self, command: str) -> bool:
        """The bash tool asks before it runs a command, unless this exact command was allowed for
        this session."""
        from treechat.widgets.question.panel import QuestionSpec

        spec = QuestionSpec("Run this shell command?", command, yes="Run", no="Refuse",
                            session="Allow this command for this session")
        return await self._confirm(spec, command)

    async def confirm_read(self, tool: str, path: str, folder: str) -> bool:
        """read, ls and grep ask the same way before they look outside the working folder, unless
        this exact path was allowed for this session."""
        from treechat.widgets.question.panel import QuestionSpec

        spec = QuestionSpec("Let the model read outside the working folder?",
                            f"{tool} {path}\n\n(the working folder is {folder})", yes="Allow", no="Refuse",
                            session="Allow this path for this session")
        return await self._confirm(spec, f"{tool}\0{path}")

    async def _confirm(self, spec: QuestionSpec, what: str) -> bool:
        allowed = (self.shell.chat.session_id, what)
        if allowed in self.allowed_commands:
            return True
        answer = await self.shell.questions.ask(spec)
        if answer == "session":
            self.allowed_commands.add(allowed)
        return answer in ("yes", "session")
