"""What every part of the TUI shares: the controller, the main screen's widgets, error display.

`TreechatApp` is assembled from small classes that each handle one kind of input (controller
events, widget requests, keys, slash commands); they all derive from `TuiBase`, so each is
type-checked against the same attributes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import App
from textual.css.query import NoMatches
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.widget import MountError, Widget

from treechat.text.sanitize import sanitize, sanitize_line
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.commands import SlashCommand
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer

from .registry import SlashCommands

if TYPE_CHECKING:  # loaded after the first frame (app/tui/starting.py)
    from treechat.chat import Chat
    from treechat.chat.state import SendKind
    from treechat.widgets.transcript.view import Transcript
    from treechat.widgets.tree.view import TreeView

    from .extensions.feature import Extensions
    from .questions.asking import Questions
    from .sessions.feature import Sessions
    from .tree.moves import TreeMoves
    from .tree.panel import TreePanel
    from .workspace.feature import Workspace

W = TypeVar("W", bound=Widget)
MAX_TOAST = 2000  # characters of a toast: a problem line quoting a huge name is cut, not drawn whole
T = TypeVar("T")
M = TypeVar("M")


def drawn(handler: Callable[[Any, M], Any]) -> Callable[[Any, M], Awaitable[None]]:
    """For the handlers of controller events: once the App is closing (no screen left), events
    still queued have nothing to be drawn on and are dropped, instead of failing on a widget."""

    @functools.wraps(handler)
    async def run(self: TuiBase, message: M) -> None:
        if not self.screen_stack:
            return
        try:
            result = handler(self, message)
            if inspect.isawaitable(result):
                await result
        except (NoMatches, MountError):
            if self.screen_stack and self.is_running:
                raise

    return run


class TuiBase(App[int]):
    slash_commands = SlashCommands()  # every command of the App's features (registry.py)
    owned: dict[type, object]  # the App's feature objects, by class (a command's owner)
    sessions: Sessions
    workspace: Workspace
    panel: TreePanel
    moves: TreeMoves
    extensions: Extensions
    chat: Chat
    questions: Questions  # the agent's questions, and who each key belongs to (questions.py)
    started = False  # the session is open and every widget is in place (app/tui/starting.py)
    # sent (or slash commands) before the session opened: they go out once it is (starting.py)
    _unsent: list[Composer.Submitted | Composer.Command]

    def stop_listening(self) -> None:
        """No more controller events for this App (it is closing)."""

    @classmethod
    def command_sources(cls) -> Sequence[type]:
        """The classes whose slash commands the App has, in the order they are listed."""
        return ()

    @classmethod
    def command_table(cls) -> list[SlashCommand]:
        """The built-in commands' rows (F1, `/help`, README, the palette)."""
        return [c.row for c in cls.slash_commands.values()]

    async def dispatch_command(self, name: str, args: str) -> None:
        """Run the registered command `name` (the caller checked it is one) on its feature."""
        registered = self.slash_commands[name]
        target = self if isinstance(self, registered.owner) else self.owned[registered.owner]
        await registered.bound(target)(args)

    async def ask(self, screen: Screen[T]) -> T:
        """Push `screen` and wait for what it is dismissed with: only from a worker (app/tui/shell.py
        says why: awaited in a message handler, the App's queue would wait for itself)."""
        return await self.push_screen(screen, wait_for_dismiss=True)

    def show(self, screen: Screen[T]) -> None:
        """Push `screen` without waiting for it."""
        self.push_screen(screen)

    async def submit(self, message: Composer.Submitted) -> None:
        """Send what the composer sent (WidgetRequests)."""
        raise NotImplementedError

    async def send_text(self, text: str, kind: SendKind, *, expand: bool = False) -> None:
        """Send `text` (a template or `/skill` expanded with `expand`); the composer gets it back
        when it was not sent (WidgetRequests)."""
        raise NotImplementedError

    async def typed_command(self, message: Composer.Command) -> None:
        """Run the slash command the composer sent (SlashCommands)."""
        raise NotImplementedError

    def hold_request(self, request: Composer.Submitted | Composer.Command) -> bool:
        """A message sent (or a command) before the session is open: kept, and shown as
        "sending", until it is (app/tui/starting.py); False once it is open."""
        if self.started:
            return False
        self._unsent.append(request)
        self.show_unsent()
        return True

    def show_unsent(self, queued: list[tuple[str, str]] | None = None) -> None:
        """The queue tray: what waits for the session to open ("sending"), then what the agent
        has queued (`queued`; None: what the tray shows now)."""
        tray = self.ui(QueueTray)
        kept = queued if queued is not None else [item for item in tray.items if item[0] != "send"]
        tray.set_items([("send", r.text) for r in self._unsent] + kept)

    def ui(self, expect_type: type[W], selector: str | None = None) -> W:
        """A widget of the main screen, even while a dialog is on top (events keep coming)."""
        if not self.screen_stack:
            raise NoMatches("the app has no screen (shutting down)")
        screen = self.screen_stack[0]
        return screen.query_one(selector, expect_type) if selector else screen.query_one(expect_type)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast, as plain text (see `_on_notify`): it may quote a model's, a server's or a file's words."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def on_notify(self, event: Notify) -> None:
        # Every toast passes here, whoever raised it (a widget's notify is the App's, a Notify may be
        # posted directly), before Textual's own handler shows it: so no caller can forget the sanitiser. A
        # skill folder's name, a server's error, a path may carry an escape sequence (an OSC 52 set
        # the clipboard) or markup ([link=…] becomes an OSC 8 hyperlink): neither reaches the terminal.
        shown = event.notification
        shown.message = _toast_text(shown.message)
        shown.title = sanitize_line(shown.title, 200)
        shown.markup = False
        # One toast at a time: the newest replaces the last (Textual's handler, after this, adds it).
        self.clear_notifications()

    def show_error(self, text: str) -> None:
        self.ui(Banner, "#banner").show(text, "error")

    def clear_error(self) -> None:
        """A new message or command: an error line about the last one is not news any more (a new
        failure shows its own)."""
        banner = self.ui(Banner, "#banner")
        if banner.severity == "error":
            banner.hide()

    async def attempt(self, work: Awaitable[T]) -> T | None:
        """Run a controller call; a ChatError (or a StorageError: a locked or full store) becomes
        the banner's one sentence."""
        from treechat.chat import ChatError
        from treechat.storage.base import StorageError

        try:
            return await work
        except (ChatError, StorageError) as err:
            self.show_error(str(err))
            return None

    def in_background(self, work: Awaitable[Any], group: str = "chat") -> None:
        """Long controller work (a compaction, a summary) without blocking the keys; every screen
        update still comes from the controller's events."""

        async def run() -> None:
            await self.attempt(work)

        self.run_worker(run(), group=group)

    @property
    def composer(self) -> Composer:
        return self.ui(Composer)

    # The transcript and the tree are mounted once the session opens (before that, their places
    # hold widgets.panels' spaces): their modules load after the first frame.
    @property
    def transcript(self) -> Transcript:
        from treechat.widgets.transcript.view import Transcript

        return self.ui(Transcript)

    @property
    def tree_view(self) -> TreeView:
        from treechat.widgets.tree.view import TreeView

        return self.ui(TreeView)

    async def run_command(self, name: str, args: str) -> None:
        """The registered slash command `name` (registry.py). From the palette before the session
        opens it waits like a typed one (app/tui/starting.py)."""
        if self.hold_request(Composer.Command(name, args, f"/{name} {args}".rstrip())):
            return
        await self.dispatch_command(name, args)

    async def copy(self, text: str, what: str = "") -> None:
        """To the clipboard: OSC 52 through the terminal (SSH, tmux) and the system's command."""
        from treechat.clipboard import copy_with_command, platform_command, size_text

        self.copy_to_clipboard(text)
        await copy_with_command(text, platform_command())
        self.notify(f"Copied {what + ', ' if what else ''}{size_text(text)}", timeout=3)

    async def pull_queued(self) -> None:
        """Alt+↑: the last queued message back into the composer, above what is typed there."""
        text = await self.chat.pull_last_queued()
        if text is not None:
            composer = self.composer
            current = composer.text.strip()
            composer.set_text(f"{text}\n{current}" if current else text)
            composer.focus()


def _toast_text(text: object) -> str:
    clean = sanitize(text).strip()
    return clean if len(clean) <= MAX_TOAST else clean[: MAX_TOAST - 1] + "…"
