"""The Textual App: a thin view over the controller.

It composes the widgets, subscribes to the controller (`treechat.chat.Chat`) and turns each of
its events into one Textual message (`messages.py`), handled in `chat_view.py`. Widgets' requests
(`requests.py`), keys (`keys.py`) and slash commands (registered with `@command`: `registry.py`,
`commands.py`, `features/`) are controller calls. The App owns no session state of its own.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self, TypeVar

from textual import events, on, work
from textual.app import ComposeResult, get_system_commands_provider
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen

from treechat.widgets import screen_messages as from_dialogs
from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.fitted_footer import FittedFooter
from treechat.widgets.chrome.panels import TranscriptSpace, TreeSpace
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.keymap import bindings_for
from treechat.widgets.question import messages as from_question
from treechat.widgets.textual_internals import (
    register_key_sequences,
)
from treechat.widgets.transcript import messages as from_transcript
from treechat.widgets.tree import messages as from_tree

from .chat_view import ChatView
from .commands import SlashCommands, TreechatCommands
from .keys import KeyActions
from .messages import ChatMessage
from .questions.asking import Questions
from .requests import WidgetRequests
from .starting import StartFn, StartUp
from .tree.panel import PANEL_CLASSES, MainScreen, TreePanel

if TYPE_CHECKING:  # the first frame is drawn before these load (app/tui/starting.py)
    from treechat.chat import Chat
    from treechat.chat.events import ChatEvent
    from treechat.storage.base import SessionStorage
    from treechat.widgets.composer.view import Completion

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
    from .workspace.feature import Workspace

register_key_sequences()  # Alt+Enter as most terminals send it (ESC CR)

F = TypeVar("F")



def _as_text(key: events.Key) -> str:
    """A key that arrived as part of a paste, as the text it stands for (a control as its picture)."""
    if key.key in ("enter", "ctrl+j", "ctrl+m"):
        return "\n"
    if key.key == "tab":
        return "\t"
    if key.character and key.is_printable:
        return key.character
    from treechat.text.sanitize import visible

    return visible(key.character) if key.character else f"<{key.key}>"


class TreechatApp(ChatView, WidgetRequests, SlashCommands, KeyActions, StartUp):
    """`TreechatApp(chat, storage)`: a controller made beforehand (tests, benches); or
    `TreechatApp(start=...)` (`treechat`): the first frame is drawn first, then `start` makes the
    controller and picks the session (app/tui/starting.py)."""

    CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles.tcss")
    TITLE = "treechat"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for("global")]
    COMMANDS = {get_system_commands_provider, TreechatCommands}

    if TYPE_CHECKING:  # the features, made once the controller is there (_attach_controller)
        search: Search
        help: Help
        models: Models
        tools: Tools
        themes: Themes
        labels: Labels
        sessions: Sessions
        workspace: Workspace
        extensions: Extensions
        permissions: Permissions
        moves: TreeMoves
        context: Context
        transcript_actions: TranscriptActions

    @classmethod
    def command_sources(cls) -> Sequence[type]:
        """The features with slash commands, in the order F1, `/help` and README list them."""
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

        return (TreeMoves, Context, TranscriptActions, Sessions, Labels, Models, Tools, Search, Workspace, Extensions, Help)

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
        self._unsubscribe = lambda: None
        self.questions = Questions(self, lambda: self.composer)
        self.panel = TreePanel(self)
        self.owned = {}
        self._stop_lock_notices: Callable[[], None] = lambda: None
        self.init_start(start)
        if chat is not None:
            self._attach_controller(chat)

    def _attach_controller(self, chat: Chat) -> None:
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
        from .workspace.feature import Workspace

        self.chat = chat
        self.search = self._own(Search(self))
        self.extensions = self._own(Extensions(self, self, self.slash_commands))
        self.help = self._own(Help(self, self.extensions))
        self.models = self._own(Models(self, detect_servers=self.detect_servers))
        self.tools = self._own(Tools(self))
        self.themes = self._own(Themes(self, self))
        self.labels = self._own(Labels(self))
        self.sessions = self._own(Sessions(self))
        self.workspace = self._own(Workspace(self))
        self.permissions = self._own(Permissions(self))
        self.moves = self._own(TreeMoves(self, self.panel))
        self.context = self._own(Context(self))
        self.transcript_actions = self._own(TranscriptActions(self))
        chat.builtin_commands = frozenset(self.slash_commands)  # no template takes a command's name
        self._unsubscribe = chat.subscribe(self._on_chat_event)
        chat.confirm = self.permissions.confirm_command
        chat.confirm_read = self.permissions.confirm_read
        chat.approve_change = self.workspace.approve_change  # edit/write: the diff, asked (workspace/)

    def _own(self, feature: F) -> F:
        self.owned[type(feature)] = feature
        return feature

    def _on_chat_event(self, event: ChatEvent) -> None:
        self.post_message(ChatMessage(event))

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
        composer.completer = self._complete_path
        composer.paste_filter = self._pasted_image
        # at once: focus() would wait behind the keys already queued, and a key that finds the
        # composer without the focus waits for the session (starting.py)
        self.screen.set_focus(composer)
        if self.first_storage is not None:  # the controller exists: open its session before the first frame
            await self.mount_panels()
            await self.attach(self.chat, self.first_storage)
            self.started = True
            self.after_start()
        else:
            self.open_after_first_frame()

    async def attach(self, chat: Chat, storage: SessionStorage) -> None:
        from treechat.storage.lock_notices import add_listener
        from treechat.text.sanitize import sanitize_line

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
        if self.detect_servers:
            self.run_worker(self._detect_local(), group="detect")
        # what other processes and machines write shows as it happens (treechat.chat.live)
        self._follow_store()
        self.call_after_refresh(self.extensions.start)  # MCP servers, skills, templates

    def _cwd(self) -> str:
        chat = getattr(self, "chat", None)
        return chat.cwd if chat is not None else os.getcwd()

    def _complete_path(self, text: str, cursor: int) -> Completion | None:
        from treechat.prompts.attachments import complete_at_path

        return complete_at_path(text, cursor, self._cwd())

    def _pasted_image(self, pasted: str) -> str | None:
        from treechat.prompts.attachments import pasted_image_token

        return pasted_image_token(pasted, self._cwd())

    @work(group="store-feed", exclusive=True, exit_on_error=False)
    async def _follow_store(self) -> None:
        """(A worker made from the method: one cancelled before it starts leaves no coroutine unawaited.)"""
        await self.chat.follow_store()

    def on_unmount(self) -> None:
        self._stop_lock_notices()
        self.stop_listening()

    def stop_listening(self) -> None:
        self._unsubscribe()  # whatever the controller does while closing has nowhere to be drawn

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

    last_key_at = 0.0  # time.monotonic() of the newest key from the terminal (StreamingView yields to typing)

    # Keys parsed in the same burst as a paste (no person types 20 ms after a paste lands) are the
    # paste's own tail: a terminal that does not filter a pasted "end of paste" sequence hands the
    # rest of the clipboard over as keys, and a Ctrl+G in it opened $EDITOR, an Enter would send.
    PASTE_TAIL = 0.02
    _paste_tail_until = float("-inf")

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self.hold_key(event):
                return  # it waits for the session (app/tui/starting.py)
            if event.time <= self._paste_tail_until:
                self._paste_tail_until = event.time + self.PASTE_TAIL
                await self.on_event(events.Paste(_as_text(event)))  # text, never a command
                return
            self.last_key_at = time.monotonic()
            if event.key != "ctrl+c":
                self._quit_armed = False  # "Ctrl+C again to quit" means the very next key
            self._key_to_stream()
            if self.questions.route_key(event):
                return  # an answer, or reading the question: not for anything else
            self._type_into_composer(event)  # before Textual hands the key to the focused widget
        elif isinstance(event, events.Paste) and not event.is_forwarded:
            self._paste_tail_until = max(self._paste_tail_until, event.time + self.PASTE_TAIL)
            self.questions.route_paste(event)
            self._paste_into_composer()
        await super().on_event(event)

    def _paste_into_composer(self) -> None:
        """A paste always lands in the composer (unless a box taking text has the focus: a
        dialog's filter, the tree's `/`): dropped on the transcript or the tree, it was lost."""
        from textual.widgets import Input, TextArea

        if self.screen is not self.screen_stack[0]:
            return  # a dialog: its own box takes it, or nothing does
        focused = self.focused
        if isinstance(focused, Input | TextArea) or getattr(focused, "takes_typing", False):
            return
        self.screen.set_focus(self.composer)

    def _key_to_stream(self) -> None:
        """A reply streaming draws what is due right after this key's frame (StreamingView.key_typed)."""
        view = sys.modules.get("treechat.widgets.transcript.view")
        if view is None:
            return  # not loaded yet (app/tui/starting.py): nothing streams
        try:
            transcript = self.ui(view.Transcript)
        except NoMatches:  # (not mounted yet: its place in the first frame)
            return
        transcript.key_typed()

    def _type_into_composer(self, event: events.Key) -> None:
        """You can always just type: a printable key that nothing focused is bound to moves the
        focus to the composer, which then gets the key like any other.

        Decided here, as each key arrives from the driver and before it is handed to the focused
        widget, so the keys behind it in the same burst follow it to the composer. (Decided where
        the key bubbles back unhandled, the rest of the burst was already queued to the panel: a
        "g" there jumped in the tree, a "y" copied in the transcript, and letters were lost.)"""
        if not event.is_printable or not event.character or self.screen is not self.screen_stack[0]:
            return
        composer = self.composer
        if composer.has_focus or getattr(self.focused, "takes_typing", False):
            return  # the composer, or a widget taking text right now (the tree's `/` filter)
        bound = self.screen.active_bindings.get(event.key)
        if bound is not None and bound.enabled:
            return  # a key the focused widget (or the App) acts on: its binding runs, not typing
        self.panel.close_drawer()  # (a drawer would cover what is being typed)
        self.screen.set_focus(composer)  # at once (focus() would defer it behind the queued keys)

    async def _detect_local(self) -> None:
        self.chat.add_local_servers(await self.chat.local.found())

    # ------------------------------------------------------------ what the widgets ask for

    @on(from_tree.LabelRequested)
    @on(from_transcript.LabelRequested)
    def _label_requested(self, message: from_tree.LabelRequested | from_transcript.LabelRequested) -> None:
        self.labels.ask_label(message.entry_id)

    @on(from_tree.NodeChosen)
    @on(from_transcript.EditRequested)  # (exactly what a click on the prompt in the tree does)
    async def _node_chosen(self, message: from_tree.NodeChosen | from_transcript.EditRequested) -> None:
        await self.moves.choose(message.entry_id)

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

    @on(from_tree.ForkRequested)
    @on(from_transcript.ForkRequested)
    async def _fork_requested(self, message: from_tree.ForkRequested | from_transcript.ForkRequested) -> None:
        await self.sessions.fork_at(message.entry_id)

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
