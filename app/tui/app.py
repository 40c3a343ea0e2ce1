"""The Textual App: a thin view over the controller, and a router to its features.

It composes the widgets, owns the features (a folder each under app/tui/: `sessions/`, `tree/`,
…; plain objects made with the `Shell`, shell.py, which the App is) and routes to them: each
widget message arrives at one `@on` handler here that calls one feature method; each key of its
own (`widgets.keymap`, context "global") is an `action_*` that does the same; each slash command
is registered with `@command` on its feature (registry.py) and dispatched by that registration.
Every controller event is posted to the App in one Textual message, `ChatMessage` (messages.py),
and drawn by the view (view/). The App owns no session state of its own.

The first frame is drawn before the session's modules load (startup/): the features the first
frame needs (the panel, what is typed and sent, the questions, Esc/Ctrl+C/Ctrl+Q, the start)
are made with the App; the others once the controller is there (`_attach_controller`), their
modules imported on a thread meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand, get_system_commands_provider
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.widget import MountError, Widget

from treechat.text.sanitize import sanitize, sanitize_line
from treechat.widgets import screen_messages as from_dialogs
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.fitted_footer import FittedFooter
from treechat.widgets.chrome.panels import TranscriptSpace, TreeSpace
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome
from treechat.widgets.commands import SlashCommand, closest
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.keymap import bindings_for
from treechat.widgets.question import messages as from_question
from treechat.widgets.textual_internals import register_key_sequences
from treechat.widgets.transcript import messages as from_transcript
from treechat.widgets.tree import messages as from_tree

from .commands import TreechatCommands
from .composer import paths
from .composer.sending import Sending
from .composer.typing import Typing
from .interrupt.feature import Interrupt
from .messages import ChatMessage
from .questions.asking import Questions
from .registry import SlashCommands
from .startup.feature import Opened, Released, StartFn, StartUp
from .tree.panel import PANEL_CLASSES, MainScreen, TreePanel

if TYPE_CHECKING:  # the first frame is drawn before these load (app/tui/startup/)
    from treechat.chat import Chat
    from treechat.chat.events import ChatEvent
    from treechat.storage.base import SessionStorage
    from treechat.widgets.transcript.view import Transcript
    from treechat.widgets.tree.view import TreeView

    from .compare.feature import Comparing
    from .context.feature import Context
    from .extensions.feature import Extensions
    from .help.feature import Help
    from .labels.feature import Labels
    from .models.feature import Models
    from .questions.permissions import Permissions
    from .search.feature import Search
    from .sessions.feature import Sessions
    from .themes.feature import Themes
    from .tools.feature import Tools
    from .transcript.feature import TranscriptActions
    from .tree.moves import TreeMoves
    from .view.chat_view import ChatView
    from .workspace.feature import Workspace

register_key_sequences()  # Alt+Enter as most terminals send it (ESC CR)

F = TypeVar("F")
T = TypeVar("T")
W = TypeVar("W", bound=Widget)
MAX_TOAST = 2000  # characters of a toast: a problem line quoting a huge name is cut, not drawn whole


class TreechatApp(App[int]):
    """`TreechatApp(chat, storage)`: a controller made beforehand (tests, benches); or
    `TreechatApp(start=...)` (`treechat`): the first frame is drawn first, then `start` makes the
    controller and picks the session (app/tui/startup/)."""

    CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles.tcss")
    TITLE = "treechat"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for("global")]
    COMMANDS = {get_system_commands_provider, TreechatCommands}

    slash_commands = SlashCommands()  # every command of the App's features (registry.py)

    chat: Chat
    last_key_at = 0.0  # time.monotonic() of the newest key from the terminal (StreamingView yields to typing)

    if TYPE_CHECKING:  # the features made once the controller is there (_attach_controller)
        view: ChatView
        moves: TreeMoves
        context: Context
        transcript_actions: TranscriptActions
        sessions: Sessions
        labels: Labels
        models: Models
        comparing: Comparing
        tools: Tools
        search: Search
        workspace: Workspace
        extensions: Extensions
        help: Help
        themes: Themes
        permissions: Permissions

    @classmethod
    def command_sources(cls) -> Sequence[type]:
        """The features with slash commands, in the order F1, `/help` and README list them."""
        from .compare.feature import Comparing
        from .context.feature import Context
        from .extensions.feature import Extensions
        from .help.feature import Help
        from .labels.feature import Labels
        from .models.feature import Models
        from .search.feature import Search
        from .sessions.feature import Sessions
        from .tools.feature import Tools
        from .transcript.feature import TranscriptActions
        from .tree.moves import TreeMoves
        from .workspace.feature import Workspace

        return (TreeMoves, Context, TranscriptActions, Sessions, Labels, Models, Comparing, Tools, Search, Workspace,
                Extensions, Help)

    @classmethod
    def command_table(cls) -> list[SlashCommand]:
        """The built-in commands' rows (F1, `/help`, README, the palette)."""
        return [c.row for c in cls.slash_commands.values()]

    def __init__(self, chat: Chat | None = None, storage: SessionStorage | None = None, *,
                 detect_servers: bool = True, start: StartFn | None = None, theme: str | None = None,
                 fresh: bool = False) -> None:
        super().__init__()
        if (chat is None) == (start is None):
            raise TypeError("TreechatApp takes a controller and its session, or a start function")
        self.first_storage = storage
        self.detect_servers = detect_servers
        self.first_theme = theme  # config.toml's theme, read without checking the rest (the first frame's)
        self.fresh = fresh  # a new session opens: the first frame shows the welcome
        self._unsubscribe: Callable[[], None] = lambda: None
        self._stop_lock_notices: Callable[[], None] = lambda: None
        self.owned: dict[type, object] = {}  # the features by class (a command's owner)
        # the features the first frame needs
        self.questions = Questions(self, lambda: self.composer)
        self.panel = TreePanel(self)
        self.sending = Sending(self, started=lambda: self.started)
        self.typing = Typing(self, lambda: self.composer, self.panel)
        self.interrupt = Interrupt(self, self, self.panel, started=lambda: self.started,
                                   stop_listening=self.stop_listening)
        self.startup = StartUp(self, self, self.sending, start)
        if chat is not None:
            self._attach_controller(chat)

    def _attach_controller(self, chat: Chat) -> None:
        """The features that need the controller (their modules were imported after the first frame)."""
        from .compare.feature import Comparing
        from .context.feature import Context
        from .extensions.feature import Extensions
        from .help.feature import Help
        from .labels.feature import Labels
        from .models.feature import Models
        from .questions.permissions import Permissions
        from .search.feature import Search
        from .sessions.feature import Sessions
        from .themes.feature import Themes
        from .tools.feature import Tools
        from .transcript.feature import TranscriptActions
        from .tree.moves import TreeMoves
        from .view.chat_view import ChatView
        from .workspace.feature import Workspace

        self.chat = chat
        self.moves = self._own(TreeMoves(self, self.panel))
        self.context = self._own(Context(self))
        self.transcript_actions = self._own(TranscriptActions(self))
        self.sessions = self._own(Sessions(self))
        self.labels = self._own(Labels(self))
        self.comparing = self._own(Comparing(self))
        self.models = self._own(Models(self, detect_servers=self.detect_servers, comparing=self.comparing))
        self.tools = self._own(Tools(self))
        self.search = self._own(Search(self))
        self.workspace = self._own(Workspace(self))
        self.extensions = self._own(Extensions(self, self.sending, self.slash_commands))
        self.help = self._own(Help(self, self.extensions))
        self.themes = Themes(self, self)
        self.permissions = Permissions(self)
        self.view = ChatView(self, sending=self.sending, moves=self.moves, panel=self.panel, workspace=self.workspace,
                             sessions=self.sessions)
        chat.builtin_commands = frozenset(self.slash_commands)  # no template takes a command's name
        self._unsubscribe = chat.subscribe(self._on_chat_event)
        chat.confirm = self.permissions.confirm_command
        chat.confirm_read = self.permissions.confirm_read
        chat.approve_change = self.workspace.approve_change  # edit/write: the diff, asked (workspace/)

    def _own(self, feature: F) -> F:
        self.owned[type(feature)] = feature
        return feature

    def _on_chat_event(self, event: ChatEvent) -> None:
        from treechat.chat.events import ReplyPending, ReplyStreaming  # (loaded by now: events follow the first frame)

        if isinstance(event, (ReplyStreaming, ReplyPending)) and not event.on_screen \
                and not self.comparing.watching(event.run):
            return  # a reply on a branch not shown: told again, as far as it came, when it is (no message each read)
        self.post_message(ChatMessage(event))

    # ------------------------------------------------------------ the start, and the end

    @property
    def started(self) -> bool:
        """The session is open and every widget is in place (app/tui/startup/)."""
        return self.startup.started

    @property
    def start_error(self) -> BaseException | None:
        """What ended the start (said after the app has closed: app/tui/run.py)."""
        return self.startup.start_error

    @property
    def start_seconds(self) -> float | None:
        """From the App's creation to `started`."""
        return self.startup.start_seconds

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                yield SessionHeader()
                yield Banner(id="banner")
                welcome = Welcome()
                welcome.display = self.fresh
                yield welcome
                space = TranscriptSpace()
                space.display = not self.fresh
                yield space
                yield QueueTray()
                yield Composer()
            yield TreeSpace()
        yield StatusBar()
        yield FittedFooter()

    async def on_mount(self) -> None:
        if self.first_theme and self.first_theme in self.available_themes:
            self.theme = self.first_theme
        self.panel.fit(self.size.width)  # the first layout at the first size (MainScreen: the next)
        self.ui(Banner, "#banner").hide()
        composer = self.composer
        composer.completer = lambda text, cursor: paths.complete_path(text, cursor, self._cwd())
        composer.paste_filter = lambda pasted: paths.pasted_image(pasted, self._cwd())
        # at once: focus() would wait behind the keys already queued, and a key that finds the
        # composer without the focus waits for the session (startup/)
        self.screen.set_focus(composer)
        if self.first_storage is not None:  # the controller exists: open its session before the first frame
            await self.startup.mount_panels()
            await self.attach(self.chat, self.first_storage)
            self.startup.started = True
            self.after_start()
        else:
            self.startup.open_after_first_frame()

    def _cwd(self) -> str:
        chat = getattr(self, "chat", None)
        return chat.cwd if chat is not None else os.getcwd()

    async def attach(self, chat: Chat, storage: SessionStorage) -> None:
        """The controller's events, its session opened."""
        from treechat.storage.lock_notices import add_listener

        if getattr(self, "chat", None) is not chat:
            self._attach_controller(chat)
        loop = asyncio.get_running_loop()

        def lock_notice(text: str) -> None:
            # a write waiting for another process's lock is said here while the screen is up (the
            # wait runs on the database's thread: hop to the app's loop)
            loop.call_soon_threadsafe(lambda: self.notify(sanitize_line(text), severity="warning", timeout=10))

        self._stop_lock_notices = add_listener(lock_notice)
        self.themes.apply_saved()
        self.panel.remembered(chat.settings.home)
        self.composer.max_paste = int(getattr(chat.settings, "max_input_mb", 1.0) * 1e6)
        await self.chat.open(storage)

    def after_start(self) -> None:
        """What runs once the session is open: local servers asked, other writers followed, MCP."""
        if self.detect_servers:
            self.run_worker(self._detect_local(), group="detect")
        # what other processes and machines write shows as it happens (treechat.chat.live)
        self._follow_store()
        self.call_after_refresh(self.extensions.start)  # MCP servers, skills, templates

    async def _detect_local(self) -> None:
        self.chat.add_local_servers(await self.chat.local.found())

    @work(group="store-feed", exclusive=True, exit_on_error=False)
    async def _follow_store(self) -> None:
        """(A worker made from the method: one cancelled before it starts leaves no coroutine unawaited.)"""
        await self.chat.follow_store()

    def on_unmount(self) -> None:
        self._stop_lock_notices()
        self.stop_listening()

    def stop_listening(self) -> None:
        """No more controller events for this App (it is closing)."""
        self._unsubscribe()  # whatever the controller does while closing has nowhere to be drawn

    # ------------------------------------------------------------ the screen, resizes, the panel's classes

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.panel.fit, id="_default")

    def on_resize(self, event: events.Resize) -> None:
        self.panel.resized()

    # A class on the App restyles every widget of the screen (Textual walks them all); the panel's
    # own classes restyle the panel alone (tree/panel.py).
    def add_class(self, *class_names: str, update: bool = True) -> Self:
        if update and class_names and PANEL_CLASSES.issuperset(class_names):
            self.panel.add(*class_names)
            return self
        return super().add_class(*class_names, update=update)

    def remove_class(self, *class_names: str, update: bool = True) -> Self:
        if update and class_names and PANEL_CLASSES.issuperset(class_names):
            self.panel.remove(*class_names)
            return self
        return super().remove_class(*class_names, update=update)

    # ------------------------------------------------------------ keys and pastes, as they arrive

    async def on_event(self, event: events.Event) -> None:
        """Every key and paste from the terminal, before Textual hands it to the focused widget:
        held until the session is open (startup/), a paste's tail as text, a question's answer
        (questions/), or typing that goes to the composer (composer/typing.py)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self.startup.hold_key(event):
                return  # it waits for the session
            pasted = self.typing.paste_tail(event)
            if pasted is not None:
                await self.on_event(pasted)  # text, never a command
                return
            self.last_key_at = time.monotonic()
            if event.key != "ctrl+c":
                self.interrupt.armed = False  # "Ctrl+C again to quit" means the very next key
            self.typing.key_to_stream()
            if self.questions.route_key(event):
                return  # an answer, or reading the question: not for anything else
            self.typing.to_composer(event)
        elif isinstance(event, events.Paste) and not event.is_forwarded:
            self.questions.route_paste(event)
            self.typing.pasted(event)
        await super().on_event(event)

    # ------------------------------------------------------------ the App's own keys (widgets.keymap, "global")

    async def action_toggle_tree(self) -> None:
        self.panel.toggle(self.tree_view, self.composer)

    async def action_sessions(self) -> None:
        await self.run_command("resume", "")

    async def action_search(self) -> None:
        await self.run_command("search", "")

    async def action_model(self) -> None:
        await self.run_command("model", "")

    async def action_thinking(self) -> None:
        await self.run_command("thinking", "")

    async def action_new_session(self) -> None:
        await self.run_command("new", "")

    async def action_help(self) -> None:
        await self.run_command("help", "")

    async def action_back(self) -> None:
        await self.run_command("back", "")

    def action_toggle_tool_output(self) -> None:
        self.transcript.toggle_tools()

    def action_toggle_thinking_blocks(self) -> None:
        self.transcript.toggle_thinking()

    async def action_stop(self) -> None:
        await self.interrupt.stop()

    async def action_interrupt(self) -> None:
        await self.interrupt.interrupt()

    async def action_quit(self) -> None:
        await self.interrupt.quit()

    async def action_pull_queued(self) -> None:
        await self.sending.pull_queued()

    async def action_edit_in_editor(self) -> None:
        from .composer.editor import edit_in_editor

        await edit_in_editor(self, self)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's own palette commands (theme, keys, screenshot, …), our quit instead of its own
        (ours keeps what was typed as a draft and asks while a reply runs)."""
        for system in super().get_system_commands(screen):
            if system.title.lower() != "quit":
                yield system
        yield SystemCommand("Quit", "Quit treechat (what you typed is kept as a draft)", self.action_quit)

    # ------------------------------------------------------------ slash commands (registry.py)

    async def run_command(self, name: str, args: str) -> None:
        """The registered slash command `name`, run on its feature. From the palette before the
        session opens it waits like a typed one (startup/)."""
        if self.sending.hold(Composer.Command(name, args, f"/{name} {args}".rstrip())):
            return
        registered = self.slash_commands[name]
        target = self if isinstance(self, registered.owner) else self.owned[registered.owner]
        await registered.bound(target)(args)

    async def run_slash(self, name: str, args: str) -> bool:
        """A command typed in the composer; False (and a sentence) for one we do not know."""
        if name not in self.slash_commands:
            guess = closest(name, list(self.slash_commands))
            hint = f" Did you mean /{guess}?" if guess else " /help lists them; start with // to send a literal /."
            self.show_error(f"Unknown command /{name}.{hint}")
            return False
        await self.run_command(name, args)
        return True

    async def typed_command(self, message: Composer.Command) -> None:
        """A prompt template or `/skill NAME text` goes as a message; else the command runs; the
        text comes back to the composer for one we do not know."""
        if await self.extensions.send_expanded(message.name, message.args, message.text, message.kind):
            return
        if not await self.run_slash(message.name, message.args):
            self.composer.give_back(message.text)

    # ------------------------------------------------------------ what the widgets ask for

    @on(Composer.Submitted)
    async def _submitted(self, message: Composer.Submitted) -> None:
        self.clear_error()
        if not self.sending.hold(message):  # before the session opens it waits (startup/)
            await self.sending.submit(message)

    @on(Composer.Command)
    async def _command_typed(self, message: Composer.Command) -> None:
        self.clear_error()
        if not self.sending.hold(message):
            await self.typed_command(message)

    @on(QueueTray.Dropped)
    async def _queue_dropped(self, message: QueueTray.Dropped) -> None:
        await self.sending.drop_queued(message.index)

    @on(QueueTray.PullLast)
    async def _queue_pull_last(self, message: QueueTray.PullLast) -> None:
        await self.sending.pull_queued()

    @on(Banner.Dismissed)
    def _banner_dismissed(self, message: Banner.Dismissed) -> None:
        self.composer.focus()

    @on(from_tree.NodeChosen)
    @on(from_transcript.EditRequested)  # (exactly what a click on the prompt in the tree does)
    async def _node_chosen(self, message: from_tree.NodeChosen | from_transcript.EditRequested) -> None:
        await self.moves.choose(message.entry_id)

    @on(from_tree.SubagentRequested)
    @on(from_transcript.SubagentRequested)
    async def _subagent_requested(self, message: from_tree.SubagentRequested
                                  | from_transcript.SubagentRequested) -> None:
        await self.moves.open_child(message.entry_id)

    @on(from_tree.PreviewRequested)
    async def _preview_requested(self, message: from_tree.PreviewRequested) -> None:
        await self.moves.preview(message.entry_id)

    @on(from_tree.DetailsRequested)
    async def _details_requested(self, message: from_tree.DetailsRequested) -> None:
        await self.moves.details(message.entry_id)

    @on(from_tree.BackRequested)
    async def _back_requested(self, message: from_tree.BackRequested) -> None:
        await self.moves.back()

    @on(from_tree.ResizeRequested)
    def _resize_requested(self, message: from_tree.ResizeRequested) -> None:
        self.panel.resize(message)

    @on(from_tree.LabelRequested)
    @on(from_transcript.LabelRequested)
    def _label_requested(self, message: from_tree.LabelRequested | from_transcript.LabelRequested) -> None:
        self.labels.ask_label(message.entry_id)

    @on(from_tree.ForkRequested)
    @on(from_transcript.ForkRequested)
    async def _fork_requested(self, message: from_tree.ForkRequested | from_transcript.ForkRequested) -> None:
        await self.sessions.fork_at(message.entry_id)

    @on(from_transcript.SiblingRequested)
    async def _sibling_requested(self, message: from_transcript.SiblingRequested) -> None:
        await self.transcript_actions.switch_sibling(message.entry_id, message.delta)

    @on(from_transcript.RetryRequested)
    async def _retry_requested(self, message: from_transcript.RetryRequested) -> None:
        await self.transcript_actions.retry(message.entry_id)

    @on(from_transcript.CopyRequested)
    async def _copy_requested(self, message: from_transcript.CopyRequested) -> None:
        await self.transcript_actions.copy(message.text, message.what)

    @on(from_transcript.ExpandCompaction)
    async def _compaction_opened(self, message: from_transcript.ExpandCompaction) -> None:
        await self.transcript_actions.show_originals(message.entry_id)

    @on(from_dialogs.Rename)
    async def _session_renamed(self, message: from_dialogs.Rename) -> None:
        await self.sessions.rename(message.session_id, message.name)

    @on(from_dialogs.Delete)
    async def _session_deleted(self, message: from_dialogs.Delete) -> None:
        await self.sessions.delete(message.session_id)

    @on(from_question.Answered)
    def _question_answered(self, message: from_question.Answered) -> None:
        self.questions.answered(message.panel, message.choice)

    @on(from_question.Attended)
    def _question_attended(self, message: from_question.Attended) -> None:
        self.questions.attend(message.panel, message.time)

    @on(Opened)
    async def _opened(self, message: Opened) -> None:
        await self.startup.opened()

    @on(Released)
    def _released(self, message: Released) -> None:
        self.startup.released_all()

    @on(ChatMessage)
    async def _chat_event(self, message: ChatMessage) -> None:
        """A controller event, drawn by the view. Once the App is closing (no screen left), events
        still queued have nothing to be drawn on and are dropped, instead of failing on a widget."""
        if not self.screen_stack:
            return
        try:
            await self.view.show(message.event)
            self.comparing.show(message.event)  # the side-by-side view of one prompt's replies, when open
        except (NoMatches, MountError):
            if self.screen_stack and self.is_running:
                raise

    # ------------------------------------------------------------ what the features are handed (shell.py)

    def ui(self, expect_type: type[W], selector: str | None = None) -> W:
        """A widget of the main screen, even while a dialog is on top (events keep coming)."""
        if not self.screen_stack:
            raise NoMatches("the app has no screen (shutting down)")
        screen = self.screen_stack[0]
        return screen.query_one(selector, expect_type) if selector else screen.query_one(expect_type)

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

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast, as plain text (see `on_notify`): it may quote a model's, a server's or a file's words."""
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

    def in_background(self, work: Awaitable[object], group: str = "chat") -> None:
        """Long controller work (a compaction, a summary) without blocking the keys; every screen
        update still comes from the controller's events."""

        async def run() -> None:
            await self.attempt(work)

        self.run_worker(run(), group=group)

    async def ask(self, screen: Screen[T]) -> T:
        """Push `screen` and wait for what it is dismissed with: only from a worker (shell.py says
        why: awaited in a message handler, the App's queue would wait for itself)."""
        return await self.push_screen(screen, wait_for_dismiss=True)

    def show(self, screen: Screen[T]) -> None:
        """Push `screen` without waiting for it."""
        self.push_screen(screen)

    async def copy(self, text: str, what: str = "") -> None:
        """To the clipboard: OSC 52 through the terminal (SSH, tmux) and the system's command."""
        from treechat.clipboard import copy_with_command, platform_command, size_text

        self.copy_to_clipboard(text)
        await copy_with_command(text, platform_command())
        self.notify(f"Copied {what + ', ' if what else ''}{size_text(text)}", timeout=3)


def _toast_text(text: object) -> str:
    clean = sanitize(text).strip()
    return clean if len(clean) <= MAX_TOAST else clean[: MAX_TOAST - 1] + "…"
