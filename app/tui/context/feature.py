"""What the model is told besides the conversation: `/compact` (older messages summarised into one
entry, nothing deleted), `/summarize` (the branch you left, added to the context), `/system` (your
own instructions, kept with the session; alone: the whole system prompt). Compaction and summaries
run in the background; the view follows the controller's events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import command

if TYPE_CHECKING:
    from ..shell import Shell


class Context:
    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    @command("compact", title="Compact the conversation", args="[instructions]",
             help="summarise older messages into one entry (nothing is deleted)")
    async def cmd_compact(self, args: str) -> None:
        self.shell.in_background(self.shell.chat.compact(args or None), group="agent")

    @command("summarize", title="Summarize the branch you left", args="[instructions]",
             help="add a summary of the abandoned branch to the context")
    async def cmd_summarize(self, args: str) -> None:
        self.shell.in_background(self.shell.chat.summarize(args or None), group="agent")

    @command("system", title="System prompt", args="[TEXT|off]",
             help="your own instructions, kept with the session (empty: show the whole prompt; off: remove them)",
             complete=lambda chat: ("off",))
    async def cmd_system(self, args: str) -> None:
        shell = self.shell
        if args.strip().lower() in ("off", "clear", "none"):
            if await shell.attempt(shell.chat.set_instructions(None)) is not None:
                shell.notify("Your instructions are removed from the system prompt.", timeout=4)
            return
        if args.strip():
            if await shell.attempt(shell.chat.set_instructions(args)) is not None:
                shell.notify("Your instructions are part of the system prompt now, kept with this session "
                             "(/system shows it all, /system off removes them).", timeout=4)
            return
        from treechat.widgets.screens import TextDialog

        shell.show(TextDialog("The system prompt (what the model is told before every request)",
                              shell.chat.system_prompt()))
