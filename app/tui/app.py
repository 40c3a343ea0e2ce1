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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

from textual import events, work
from textual._compositor import Compositor
from textual.app import ComposeResult, get_system_commands_provider
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.fitted_footer import FittedFooter
from treechat.widgets.chrome.panels import TranscriptSpace, TreeSpace
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer
from treechat.widgets.keymap import bindings_for

from .chat_view import ChatView
from .commands import SlashCommands, TreechatCommands
from .extensions_view import ExtensionsView
from .features.help import Help
from .features.labels import Labels
from .features.models import Models
from .features.search import Search
from .features.sessions import Sessions
from .features.tools import Tools
from .keys import KeyActions
from .messages import ChatMessage
from .questions import Questions
from .requests import WidgetRequests
from .starting import StartFn, StartUp
from .terminal_keys import register
from .themes import ThemeSettings
from .workspace_view import WorkspaceView

if TYPE_CHECKING:  # the first frame is drawn before these load (app/tui/starting.py)
    from treechat.chat import Chat
    from treechat.chat.events import ChatEvent
    from treechat.storage.base import SessionStorage
    from treechat.widgets.composer.view import Completion
    from treechat.widgets.question.panel import QuestionPanel, QuestionSpec
    from treechat.widgets.tree.view import TreeView

register()  # Alt+Enter as most terminals send it (ESC CR)

NARROW = 110  # columns: below this the tree panel becomes a drawer
# The App's classes that place the tree panel (styles.tcss uses them in the panel's rules only):
# a change of these restyles the panel, not every widget (TreechatApp.add_class)
PANEL_CLASSES = frozenset({"-narrow", "-tree-hidden"})
PANEL = "TreeView, TreeSpace"
RESIZE_BURST = 1 / 120  # seconds: resizes closer than this are one (Textual's own wait)


class MainScreen(Screen[None]):
    """The App's own screen: it places the tree panel for a new width just before its layout at
    that size. (Done where the App hears of the resize, the restyle was laid out at the old size
    first: the App hands the new size to its screens a timer later, and the screen's update came
    between. That layout measured every mounted message at a width no frame showed.)
    Its compositor draws only what is not covered (CoveredCompositor, below)."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = CoveredCompositor()

    def on_resize(self, event: events.Resize) -> None:
        # a handler of the subclass: it runs before Screen._on_resize, which lays out at the size
        if event.size == self._compositor.size:
            # the screen's own size, told to it after the layout that set it: laid out again,
            # the screen would measure and draw every widget again for nothing
            event.prevent_default()
            return
        fit = getattr(self.app, "fit_width", None)
        if fit is not None:
            fit(event.size.width)

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        # A layout tells each widget its size and virtual size. Textual sets the virtual size as a
        # reactive that refreshes the widget and asks for another layout: of what this one just
        # measured (after a resize every mounted widget asked, a second whole-screen layout; each
        # ask emptied its ancestors' arrangement caches, so going back to a width seen before
        # measured everything again), and every widget was painted twice, in this layout's frame
        # and again in the next (10-20 ms at 160x45). Here the sizes are told as Textual's own
        # scroll-only layout tells them (no refresh, no ask): this layout's frame paints whatever
        # moved or changed size. Any other ask made during it is dropped too; an ask made before
        # it stays, and so does a scrollbar that came or went (the content beside it has a new
        # width: that needs the next layout).
        before = {widget: _bars(widget) for widget in self._compositor.widgets if not widget._layout_required}
        Widget._size_updated = _size_told  # type: ignore[method-assign,assignment]  # (put back below: synchronous)
        try:
            super()._refresh_layout(size, scroll)
        finally:
            Widget._size_updated = _size_updated  # type: ignore[method-assign]
        for widget, bars in before.items():
            if _bars(widget) == bars:
                widget._layout_required = False


_size_updated = Widget._size_updated


def _size_told(widget: Widget, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
    """``Widget._size_updated`` as Textual calls it after a scroll: the virtual size set quietly."""
    return _size_updated(widget, size, virtual_size, container_size, layout=False)


def _kept(node: object) -> None:
    """(Stylesheet._process_component_classes while the panel is placed: its parts keep their styles.)"""


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


def _bars(widget: Widget) -> tuple[bool, bool]:
    return widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar


class CoveredCompositor(Compositor):
    """The App screen's compositor: Textual's, drawing only what is not covered.

    Textual builds a frame front to back: every visible widget renders all its lines in the update's
    crop, each line is cut into one strip per column span ("chop") and the front-most strip of a span
    wins. The containers behind (the screen, the main row, the chat column, the transcript, each
    message's frame) are rendered and cut too, though what is in front covers nearly all of them: at
    160x45 about half a full frame's strips, made and thrown away (issue 26: a resize's frame is a full
    one). Here a widget renders only the lines on which some span it reaches is still open, and only
    those lines are cut; what a frame shows is the same (the front-most strip of each span).

    Overrides ``Compositor._render_chops`` (with ``_get_renders``'s crop rules) under the pin
    ``textual>=8.2.8,<8.3``; tests/tui/test_resize.py and the snapshot tests draw through it."""

    def _render_chops(self, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            if crop and not crop.overlaps(clip):
                continue
            shown = intersection(region, clip)  # (Textual's render crop: the part inside the clip)
            if not (shown.width and shown.height):
                continue
            first_cut, last_cut = shown.column_span
            spans: dict[int, list[int]] = {}  # line -> the cuts it reaches there, while one is open
            for y in shown.line_range:
                if not is_rendered_line(y):
                    continue
                line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                line = chops[y]
                if any(line.get(cut, False) is None for cut in line_cuts[:-1]):  # (the last: its right edge)
                    spans[y] = line_cuts
            if not spans:
                continue  # covered wherever this update draws: not rendered at all
            top, bottom = min(spans), max(spans) + 1
            strips = widget.render_lines(Region(shown.x - region.x, top - region.y, shown.width, bottom - top))
            x = shown.x
            for y, strip in zip(range(top, bottom), strips):
                reached = spans.get(y)
                if reached is None:
                    continue
                line = chops[y]
                for cut, piece in zip(reached, strip.divide([cut - x for cut in reached[1:]])):
                    if line.get(cut) is None:
                        line[cut] = piece
        return chops  # type: ignore[return-value]  # (every span filled: the screen covers all)


class TreechatApp(ChatView, WidgetRequests, SlashCommands, Sessions, Labels, Models, Tools, Search, WorkspaceView,
                  ExtensionsView, Help, KeyActions, ThemeSettings, StartUp):
    """`TreechatApp(chat, storage)`: a controller made beforehand (tests, benches); or
    `TreechatApp(start=...)` (`treechat`): the first frame is drawn first, then `start` makes the
    controller and picks the session (app/tui/starting.py)."""

    CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles.tcss")
    TITLE = "treechat"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings_for("global")]
    COMMANDS = {get_system_commands_provider, TreechatCommands}

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
        self.allowed_commands: set[tuple[str, str]] = set()  # (session id, command or path): "allow for this session"
        self.allowed_edits: set[str] = set()  # session ids: "allow edits for this session"
        self.questions = Questions(self)
        self.parked_drafts = {}
        self._stop_lock_notices: Callable[[], None] = lambda: None
        self.init_start(start)
        if chat is not None:
            self._attach_controller(chat)

    def _attach_controller(self, chat: Chat) -> None:
        self.chat = chat
        chat.builtin_commands = frozenset(self.slash_commands)  # no template takes a command's name
        self._unsubscribe = chat.subscribe(self._on_chat_event)
        chat.confirm = self.confirm_command
        chat.confirm_read = self.confirm_read
        chat.approve_change = self.approve_change  # edit/write: the diff, asked (workspace_view.py)

    def _on_chat_event(self, event: ChatEvent) -> None:
        from treechat.chat.events import ReplyPending, ReplyStreaming  # (loaded by now: events follow the first frame)

        if isinstance(event, (ReplyStreaming, ReplyPending)) and not event.on_screen:
            return  # a reply on a branch not shown: told again, as far as it came, when it is (no message each read)
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
        self.apply_saved_theme()
        self.remembered_tree_width()
        self.composer.max_paste = int(getattr(chat.settings, "max_input_mb", 1.0) * 1e6)
        await self.chat.open(storage)

    def after_start(self) -> None:
        if self.detect_servers:
            self.run_worker(self._detect_local(), group="detect")
        # what other processes and machines write shows as it happens (treechat.chat.live)
        self._follow_store()
        self.call_after_refresh(lambda: self.run_worker(self.start_extensions(), group="mcp"))  # MCP, skills

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
            self.call_next(self._resize_now)  # after App._on_resize (it runs after this handler)
        self._resized_at = now

    def _resize_now(self) -> None:
        if self._resize_timer is not None:  # (not yet handed over)
            self._check_resize()

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
        stylesheet = self.stylesheet
        stylesheet._process_component_classes = _kept  # type: ignore[method-assign]  # (removed below)
        try:
            stylesheet.update_nodes([node for panel in self._panels() for node in panel.walk_children(with_self=True)],
                                    animate=True)
        finally:
            del stylesheet._process_component_classes

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

    async def confirm_command(self, command: str) -> bool:
        """The bash tool asks before it runs a command (typing cannot answer: app/tui/questions.py),
        unless this exact command was allowed for this session."""
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
        allowed = (self.chat.session_id, what)
        if allowed in self.allowed_commands:
            return True
        answer = await self.questions.ask(spec)
        if answer == "session":
            self.allowed_commands.add(allowed)
        return answer in ("yes", "session")

    def on_question_panel_answered(self, message: QuestionPanel.Answered) -> None:
        self.questions.answered(message.panel, message.choice)

    def on_question_panel_attended(self, message: QuestionPanel.Attended) -> None:
        self.questions.attend(message.panel, message.time)
