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
from textual.widget import Widget

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
    OneLayoutScreen,
    register_key_sequences,
    resize_screens_now,
    restyle_keeping_parts,
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

if TYPE_CHECKING:  # the first frame is drawn before these load (app/tui/starting.py)
    from treechat.chat import Chat
    from treechat.chat.events import ChatEvent
    from treechat.storage.base import SessionStorage
    from treechat.widgets.composer.view import Completion
    from treechat.widgets.tree.view import TreeView

    from .extensions.feature import Extensions
    from .help.feature import Help
    from .labels.feature import Labels
    from .models.feature import Models
    from .questions.permissions import Permissions
    from .search.feature import Search
    from .sessions.feature import Sessions
    from .themes.feature import Themes
    from .tools.feature import Tools
    from .workspace.feature import Workspace

register_key_sequences()  # Alt+Enter as most terminals send it (ESC CR)

F = TypeVar("F")

NARROW = 110  # columns: below this the tree panel becomes a drawer
# The App's classes that place the tree panel (styles.tcss uses them in the panel's rules only):
# a change of these restyles the panel, not every widget (TreechatApp.add_class)
PANEL_CLASSES = frozenset({"-narrow", "-tree-hidden"})
PANEL = "TreeView, TreeSpace"
RESIZE_BURST = 1 / 120  # seconds: resizes closer than this are one (Textual's own wait)


class MainScreen(OneLayoutScreen):
    """The App's own screen: it places the tree panel for a new width just before its layout at
    that size. (Done where the App hears of the resize, the restyle was laid out at the old size
    first: the App hands the new size to its screens a timer later, and the screen's update came
    between. That layout measured every mounted message at a width no frame showed.)
    A resize is one layout, and a frame draws only what is not covered (OneLayoutScreen,
    widgets/textual_internals.py)."""

    def on_resize(self, event: events.Resize) -> None:
        # a handler of the subclass: it runs before Textual's own, which lays out at the size
        if event.size == self.laid_out_size:
            # the screen's own size, told to it after the layout that set it: laid out again,
            # the screen would measure and draw every widget again for nothing
            event.prevent_default()
            return
        fit = getattr(self.app, "fit_width", None)
        if fit is not None:
            fit(event.size.width)


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

    @classmethod
    def command_sources(cls) -> Sequence[type]:
        """The features with slash commands, in the order F1, `/help` and README list them."""
        from .extensions.feature import Extensions
        from .help.feature import Help
        from .labels.feature import Labels
        from .models.feature import Models
        from .search.feature import Search
        from .sessions.feature import Sessions
        from .tools.feature import Tools
        from .workspace.feature import Workspace

        return (SlashCommands, Sessions, Labels, Models, Tools, Search, Workspace, Extensions, Help)

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
        self._tree_hidden_when_wide = False
        self.questions = Questions(self, lambda: self.composer)
        self.owned = {}
        self.parked_drafts = {}
        self._stop_lock_notices: Callable[[], None] = lambda: None
        self.init_start(start)
        if chat is not None:
            self._attach_controller(chat)

    def _attach_controller(self, chat: Chat) -> None:
        from .extensions.feature import Extensions
        from .help.feature import Help
        from .labels.feature import Labels
        from .models.feature import Models
        from .questions.permissions import Permissions
        from .search.feature import Search
        from .sessions.feature import Sessions
        from .themes.feature import Themes
        from .tools.feature import Tools
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
        self.fit_width(self.size.width)  # the first layout at the first size (MainScreen: the next)
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
        self.remembered_tree_width()
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
        return MainScreen(id="_default")

    _resized_at = 0.0  # time.monotonic() of the last resize from the terminal

    def on_resize(self, event: events.Resize) -> None:
        """Textual hands a new size to the screens 1/120 s later, to make one of a burst of them
        (a window being dragged); a resize that is not part of a burst goes at once."""
        now = time.monotonic()
        if now - self._resized_at > RESIZE_BURST:
            self.call_next(self._resize_now)  # after Textual's own resize handler (it runs after this one)
        self._resized_at = now

    def _resize_now(self) -> None:
        resize_screens_now(self)

    def fit_width(self, width: int) -> None:
        """Under NARROW columns the tree is a drawer over the transcript (closed at first, or open
        when the tree has the focus), so a reply is readable at full width; back above it, the
        tree is where it was."""
        narrow = width < NARROW
        if narrow == self.has_class("-narrow"):
            return
        # both classes first, then one restyle of the panel (a restyle each was twice the work)
        if narrow:
            self._tree_hidden_when_wide = self.has_class("-tree-hidden")
            super().add_class("-narrow", update=False)
            if not any(panel.has_focus for panel in self._panels()):
                super().add_class("-tree-hidden", update=False)  # the drawer starts closed, unless you are in the tree
        else:
            super().remove_class("-narrow", update=False)
            if self._tree_hidden_when_wide:
                super().add_class("-tree-hidden", update=False)
            else:
                super().remove_class("-tree-hidden", update=False)
        self._apply_tree_width()
        self._restyle_panel()

    # A class on the App restyles every widget of the screen (Textual walks them all): with a
    # transcript mounted, tens of ms in the frame of the key or resize that opened, closed or
    # docked the tree panel. The panel's own classes restyle the panel alone: no other rule
    # names them (styles.tcss).
    def add_class(self, *class_names: str, update: bool = True) -> Self:
        if not (update and class_names and PANEL_CLASSES.issuperset(class_names)):
            return super().add_class(*class_names, update=update)
        if not self.has_class(*class_names):
            super().add_class(*class_names, update=False)
            self._restyle_panel()
        return self

    def remove_class(self, *class_names: str, update: bool = True) -> Self:
        if not (update and class_names and PANEL_CLASSES.issuperset(class_names)):
            return super().remove_class(*class_names, update=update)
        if any(self.has_class(name) for name in class_names):
            super().remove_class(*class_names, update=False)
            self._restyle_panel()
        return self

    # ------------------------------------------------------------ the tree panel's width

    tree_width = 44  # columns, beside the transcript (a drawer on a narrow terminal has its own)
    MIN_TREE, MIN_CHAT = 24, 40

    def set_tree_width(self, width: int, *, keep: bool = False) -> None:
        """The panel `width` columns wide (within what leaves the conversation room); `keep`:
        remembered in state.json for the next start."""
        self.tree_width = max(self.MIN_TREE, min(width, self.size.width - self.MIN_CHAT))
        self._apply_tree_width()
        if keep:
            self.run_worker(self._keep_tree_width(self.tree_width), group="state", exclusive=True)

    def _apply_tree_width(self) -> None:
        # an inline width beats the stylesheet, so it is cleared for the drawer (its width is 85%)
        for panel in self._panels():
            panel.styles.width = None if self.has_class("-narrow") else self.tree_width

    async def _keep_tree_width(self, width: int) -> None:
        from treechat.config.state import StateFile

        await asyncio.to_thread(StateFile(self.chat.settings.home).update, tree_width=width)

    def remembered_tree_width(self) -> None:
        """The width kept from last time (once the session's home is known)."""
        from treechat.config.state import StateFile

        kept = StateFile(self.chat.settings.home).read().get("tree_width")
        if isinstance(kept, int) and kept != self.tree_width:
            self.set_tree_width(kept)

    def on_tree_view_resize_requested(self, message: TreeView.ResizeRequested) -> None:
        width = message.width if message.width is not None else self.tree_width + message.delta
        self.set_tree_width(width, keep=message.final)

    def _restyle_panel(self) -> None:
        if not self.screen_stack:
            return
        # The panel classes place the panel; no rule gives its parts (the tree's component
        # classes: the cursor, the roles, ...) a style by them, and Textual's restyle of a node
        # styles each of those parts again (17 for the tree: 2-5 ms of each resize across NARROW
        # columns and each Ctrl+B). Those are kept; a theme or focus change restyles them as ever.
        restyle_keeping_parts(self.stylesheet,
                              [node for panel in self._panels() for node in panel.walk_children(with_self=True)])

    def _panels(self) -> list[Widget]:
        """The tree panel (or its place): a child of #main (a query of the whole screen was ~3 ms)."""
        if not self.screen_stack:
            return []
        main = self.screen_stack[0].query_children("#main")
        return list(main.first().query_children(PANEL)) if main else []

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
        if self.has_class("-narrow"):
            self.add_class("-tree-hidden")  # the drawer would cover what is being typed
        self.screen.set_focus(composer)  # at once (focus() would defer it behind the queued keys)

    async def _detect_local(self) -> None:
        self.chat.add_local_servers(await self.chat.local.found())

    # ------------------------------------------------------------ what the widgets ask for

    @on(from_tree.LabelRequested)
    @on(from_transcript.LabelRequested)
    def _label_requested(self, message: from_tree.LabelRequested | from_transcript.LabelRequested) -> None:
        self.labels.ask_label(message.entry_id)

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
