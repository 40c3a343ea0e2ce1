"""Slash commands and the command palette, both from the one table in `treechat.widgets.commands`.

`/name args` typed in the composer (or the palette entry) calls `cmd_<name>(args)` here; an
unknown `/word` is never sent to the model: the text stays and the banner names the closest
command. Every `cmd_` is a thin call into the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from textual import on
from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape
from textual.screen import Screen

from treechat.widgets.commands import BY_NAME, SLASH_COMMANDS, SlashCommand, closest
from treechat.widgets.composer.view import Composer

from .extensions_view import ExtensionsView

if TYPE_CHECKING:
    from treechat.storage.base import SearchHit

# The dialogs (treechat.widgets.screens) and the model lists are imported by the commands that
# open them: they load after the first frame (app/tui/starting.py).


class TreechatCommands(Provider):
    """Command palette (Ctrl+P): every slash command, with its argument hint."""

    def _run(self, command: SlashCommand) -> Callable[[], None]:
        app = self.app
        assert isinstance(app, SlashCommands)

        def run() -> None:  # the coroutine is made only when the command is chosen
            if command.name not in BY_NAME:  # a prompt template: into the composer, for its arguments
                app.composer.set_text(f"/{command.name} ")
                app.composer.focus()
                return
            app.run_worker(app.run_command(command.name, ""), group="command")

        return run

    @staticmethod
    def _help(command: SlashCommand) -> str:
        # the palette reads help as markup: "[instructions]" would vanish as an unknown style tag
        key = f" ({command.key})" if command.key else ""
        return escape(f"{command.usage}: {command.help}{key}")

    def _commands(self) -> list[SlashCommand]:
        app = self.app
        assert isinstance(app, SlashCommands)
        chat = getattr(app, "chat", None)  # (none before the session opens: app/tui/starting.py)
        return [*SLASH_COMMANDS, *(chat.command_rows() if chat is not None else [])]  # and the prompt templates found

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(command.title, self._run(command), help=self._help(command))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = max(matcher.match(command.title), matcher.match("/" + command.name))
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), self._run(command), help=self._help(command))


class SlashCommands(ExtensionsView):
    @on(Composer.Command)
    async def _composer_command(self, message: Composer.Command) -> None:
        if not self.hold_request(message):  # before the session opens it waits (app/tui/starting.py)
            await self.command(message)

    async def command(self, message: Composer.Command) -> None:
        if await self.send_expanded(message):  # a prompt template or /skill NAME (tui/extensions_view.py)
            return
        if not await self.run_slash(message.name, message.args):
            self.composer.give_back(message.text)

    async def run_slash(self, name: str, args: str) -> bool:
        """A command typed in the composer; False (and a sentence) for one we do not know."""
        if name not in BY_NAME:
            guess = closest(name)
            hint = f" Did you mean /{guess}?" if guess else " /help lists them; start with // to send a literal /."
            self.show_error(f"Unknown command /{name}.{hint}")
            return False
        await self.run_command(name, args)
        return True

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's own palette commands (theme, keys, screenshot, …), our quit instead of its own
        (ours keeps what was typed as a draft and asks while a reply runs)."""
        for command in super().get_system_commands(screen):
            if command.title.lower() != "quit":
                yield command
        yield SystemCommand("Quit", "Quit treechat (what you typed is kept as a draft)", self.action_quit)

    # ------------------------------------------------------------ the commands (widgets.commands)

    async def cmd_tree(self, args: str) -> None:
        self.remove_class("-tree-hidden")
        self.tree_view.focus()

    async def cmd_back(self, args: str) -> None:
        await self.attempt(self.chat.back())

    async def cmd_fork(self, args: str) -> None:
        where = args or "here"
        if where not in ("here", "before"):
            self.show_error("Use /fork here (with the current reply) or /fork before (edit the last prompt).")
            return
        position: Literal["at", "before"] = "at" if where == "here" else "before"
        await self.leave_session(lambda text: self.chat.fork(None, position, composer_text=text))

    async def cmd_resume(self, args: str) -> None:
        from treechat.widgets.screens import SessionsScreen

        rows = await self.chat.list_sessions()

        async def done(choice: object) -> None:
            if isinstance(choice, SessionsScreen.Resume):
                await self.leave_session(lambda text: self.chat.resume(choice.session_id, composer_text=text))
            elif isinstance(choice, SessionsScreen.New):
                await self.cmd_new("")

        self.push_screen(SessionsScreen(rows, current_id=self.chat.session_id), callback=done)

    async def cmd_new(self, args: str) -> None:
        await self.leave_session(lambda text: self.chat.new_session(composer_text=text))
        self.composer.focus()

    async def cmd_name(self, args: str) -> None:
        await self.attempt(self.chat.rename(args))

    async def cmd_label(self, args: str) -> None:
        await self.attempt(self.chat.label(None, args))

    async def cmd_compact(self, args: str) -> None:
        self.in_background(self.chat.compact(args or None), group="agent")

    async def cmd_summarize(self, args: str) -> None:
        self.in_background(self.chat.summarize(args or None), group="agent")

    async def cmd_model(self, args: str) -> None:
        """`/model REF` sets it (an unknown provider is the banner's one sentence); `/model` opens
        the picker, which shows the controller's refusal in the dialog and stays open."""
        if args:
            error = await self.choose_model(args)
            if error:
                self.show_error(error)
            return
        from treechat.config.state import StateFile
        from treechat.widgets.screens import ModelPicker

        from .model_choices import model_groups

        current = self.chat.current_model()
        recent = StateFile(self.chat.settings.home).recent_models()
        picker = ModelPicker(model_groups(self.chat, recent), current=current.ref if current else None,
                             choose=self.choose_model)
        self.push_screen(picker)

        async def ask_servers_again() -> None:  # a server started since start-up shows up here
            self.chat.add_local_servers(await self.chat.local.found(busy=self.chat.busy_server()))
            if picker.is_attached:
                picker.set_groups(model_groups(self.chat, recent))

        if getattr(self, "detect_servers", True):
            self.run_worker(ask_servers_again(), group="detect")

    async def choose_model(self, ref: str) -> str | None:
        """Set the model; None when done (and it goes first in the recent list), else why not."""
        from treechat.chat import ChatError
        from treechat.config.state import StateFile

        try:
            await self.chat.set_model(ref)
        except ChatError as err:
            return str(err)
        StateFile(self.chat.settings.home).remember_model(ref)
        return None

    async def cmd_thinking(self, args: str) -> None:
        from treechat.widgets.screens import ThinkingPicker

        from .model_choices import thinking_levels

        async def done(level: str | None) -> None:
            if level:
                await self.attempt(self.chat.set_thinking(level))

        if args:
            await done(args)
            return
        levels, note = thinking_levels(self.chat.current_model())
        self.push_screen(ThinkingPicker(self.chat.status().thinking, levels, note), callback=done)

    async def cmd_search(self, args: str) -> None:
        from treechat.widgets.screens import SearchScreen

        async def search(query: str, further: int = 0) -> list[SearchHit]:
            return await self.chat.catalog.search(query, limit=50, further=further)

        async def done(choice: object) -> None:
            if isinstance(choice, SearchScreen.Chosen):
                await self.show_hit(choice.hit)

        self.push_screen(SearchScreen(search, query=args), callback=done)

    async def show_hit(self, hit: SearchHit) -> None:
        await self.attempt(self.chat.jump_to(hit))  # the view follows the Focused event

    async def cmd_copy(self, args: str) -> None:
        n: int | None = None
        if args.strip():
            if not args.strip().isdigit():
                self.show_error("/copy takes the number of a message from the end (1 is the last), or nothing.")
                return
            n = int(args)
        text = await self.attempt(self.chat.copy_text(n))
        if text is not None:
            await self.copy(text)

    async def cmd_retry(self, args: str) -> None:
        await self.attempt(self.chat.retry())

    async def cmd_system(self, args: str) -> None:
        if args.strip().lower() in ("off", "clear", "none"):
            if await self.attempt(self.chat.set_instructions(None)) is not None:
                self.notify("Your instructions are removed from the system prompt.", timeout=4)
            return
        if args.strip():
            if await self.attempt(self.chat.set_instructions(args)) is not None:
                self.notify("Your instructions are part of the system prompt now, kept with this session "
                            "(/system shows it all, /system off removes them).", timeout=4)
            return
        from treechat.widgets.screens import TextDialog

        self.push_screen(TextDialog("The system prompt (what the model is told before every request)",
                                    self.chat.system_prompt()))

    async def cmd_export(self, args: str) -> None:
        """In a worker: a 100k-entry page takes seconds, and the App's own handler waiting for it
        would hold every key meanwhile (the keys go through the App's message queue)."""
        entries = (await self.chat.session.storage.get_session_stats()).entry_count
        if entries >= 5000:
            self.notify(f"Exporting {entries:,} entries… (you can keep working)", timeout=4)

        async def export() -> None:
            path = await self.attempt(self.chat.export(args or None))
            if path is not None:
                self.notify(f"Exported to {path}", timeout=6)

        self.run_worker(export(), group="export")

    async def cmd_session(self, args: str) -> None:
        self.notify(await self.chat.info(), timeout=10)

    async def cmd_help(self, args: str) -> None:
        from treechat.widgets.screens import HelpScreen

        self.push_screen(HelpScreen(extra=self.extensions_help()))

