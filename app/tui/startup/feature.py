"""The start: the first frame first, then the session (issue 27).

`treechat` draws its first frame before it loads anything that frame does not draw: config.toml's
checked settings (pydantic), the store and its vocabulary, the providers (httpx), the agent, and
the heavy widgets (the transcript's markdown, the tree) load right after it, their imports on a
thread (`SESSION_MODULES`) so that keys keep being handled meanwhile. Until the session is open:

- what you type goes into the composer at once (it is in the first frame);
- a message you send is shown in the queue tray ("sending") and goes out the moment the session
  is open; a slash command waits the same way;
- a key the App or the screen acts on (Ctrl+L, Ctrl+R, F1, Esc, Tab, a click on the footer) waits,
  and so does every key after it: once the session is open they run in the order they came;
- Ctrl+Q quits at once when nothing was typed (else it waits too: what was typed becomes the
  session's draft).

The dialogs, export and search load on first use (`LATER_MODULES` on the thread once the session
is open, so the first one opens at once too). `tests/tui/test_start.py` drives this with the pilot;
`tests/test_start_imports.py` runs the real `treechat` in a terminal and lists what the first
frame imported.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from textual import events
from textual.message import Message

from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.panels import TranscriptSpace, TreeSpace
from treechat.widgets.composer.view import Composer

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer
    from textual.worker import Worker

    from treechat.chat import Chat
    from treechat.storage.base import SessionStorage

    from ..composer.sending import Sending

Report = Callable[[str], None]
StartFn = Callable[[Report], Awaitable[tuple["Chat", "SessionStorage"]]]

# The App's features, made once the session is open (app.py)
FEATURE_MODULES = tuple(f"treechat.tui.{name}" for name in (
    "context.feature", "extensions.feature", "help.feature", "labels.feature", "models.feature",
    "questions.permissions", "search.feature", "sessions.feature", "themes.feature", "tools.feature",
    "transcript.feature", "tree.moves", "view.chat_view", "workspace.feature"))
# What opening the session needs (and the features), imported on a thread right after the first frame (the start
# function imports them too, on the event loop, if the thread has not got there yet).
SESSION_MODULES = ("pydantic", "treechat.storage.model", "treechat.config.settings", "treechat.bootstrap",
                   "treechat.llm.registry", "treechat.chat", "treechat.widgets.transcript.view",
                   "treechat.widgets.tree.view", "treechat.tui.transcript.items", *FEATURE_MODULES)
# What the first request needs beyond them (the HTTP stack's lower layers load on first connect),
# imported on the thread while the session opens. A name that is not there is skipped.
REQUEST_MODULES = ("httpcore", "anyio", "anyio._backends._asyncio", "h11")
# What the first dialog, search or command needs: imported on the thread once the app is idle (no
# reply running, no key for a moment), so that it slows neither the first reply nor typing.
LATER_MODULES = ("treechat.widgets.screens", "treechat.tui.models.choices", "treechat.export.formats")
IDLE_S = 0.5

SLOW_START_S = 1.0  # a start that takes longer says what it is doing


async def import_in_background(names: tuple[str, ...], *, optional: bool = False) -> None:
    """Import `names` on a thread while the event loop goes on. The interpreter's switch interval
    is shortened meanwhile: at its default (5 ms) a thread busy importing holds the GIL that long
    each time the loop hands it over for a select() or a write, and a frame that makes a few of
    those took 100 ms more to be drawn."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.0005))
    try:
        await asyncio.to_thread(import_all, names, optional=optional)
    finally:
        sys.setswitchinterval(interval)


def import_all(names: tuple[str, ...], *, optional: bool = False) -> None:
    for name in names:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:
                if not optional:
                    raise


@dataclass
class Opened(Message):
    """The session is open: what waited for it can run (handled in the App's message loop, in
    order with the keys that came meanwhile)."""


@dataclass
class Released(Message):
    """The held keys posted again have all been handled."""


class Starting(Protocol):
    """The App's own part of the start."""

    @property
    def chat(self) -> Chat: ...

    @property
    def last_key_at(self) -> float: ...

    async def attach(self, chat: Chat, storage: SessionStorage) -> None:
        """The controller's events, its session opened."""
        ...

    def after_start(self) -> None:
        """What runs once the session is open (the feed, the servers)."""
        ...

    async def typed_command(self, message: Composer.Command) -> None:
        """A slash command (or template) the composer sent."""
        ...


class StartUp:
    """Handed the Textual App (its queries, timers and messages), the App's own part of the start
    (`host`), what was sent meanwhile (`sending`) and `start` (None: the session opens before the
    first frame, `TreechatApp(chat, storage)`)."""

    def __init__(self, app: App[int], host: Starting, sending: Sending, start: StartFn | None) -> None:
        self.app, self.host, self.sending, self._start = app, host, sending, start
        self.started = False  # the session is open and every widget is in place
        self.start_error: BaseException | None = None
        self.start_seconds: float | None = None  # from the App's creation to `started`
        self._created_at = time.perf_counter()
        self._opening = False
        self._idle_check: Timer | None = None
        self._held: list[events.Key] = []  # keys that wait for the session
        self._released: set[int] = set()  # (ids of) the held keys posted again
        self._releasing = False

    # ------------------------------------------------------------ the panels

    async def mount_panels(self) -> None:
        """The transcript and the tree in the places the first frame kept for them."""
        from treechat.widgets.transcript.view import Transcript
        from treechat.widgets.tree.view import TreeView

        app = self.app
        spaces = app.query(TranscriptSpace), app.query(TreeSpace)
        if not (spaces[0] and spaces[1]):
            return  # done already
        with app.batch_update():  # one frame: each in its place before its space goes, nothing moves
            for space, widget in ((spaces[0].first(), Transcript()), (spaces[1].first(), TreeView(id="tree"))):
                if isinstance(widget, Transcript):
                    widget.display = space.display  # (set by the App: the welcome shows in its place)
                await app.query_one("#chat" if isinstance(widget, Transcript) else "#main").mount(widget, after=space)
                await space.remove()

    # ------------------------------------------------------------ opening after the first frame

    def open_after_first_frame(self) -> None:
        """Right after the first frame is drawn, the session is opened (its imports on a thread)."""
        if not self._opening:
            self._opening = True
            # (the worker made from the method: one cancelled before it starts leaves no coroutine unawaited)
            self.app.call_after_refresh(self.app.run_worker, self._open_session, group="start", exit_on_error=False)

    async def _open_session(self) -> None:
        assert self._start is not None
        slow = self.app.set_timer(SLOW_START_S, lambda: self._report("Opening the sessions…"))
        try:
            await import_in_background(SESSION_MODULES)
            self._import_later(REQUEST_MODULES, optional=True)
            chat, storage = await self._start(self._report)
            await self.mount_panels()
            await self.host.attach(chat, storage)
        except Exception as err:  # noqa: BLE001 - said after the app has closed (run_tui)
            self.start_error = err
            self.app.exit(return_code=1)
            return
        finally:
            slow.stop()
        self.app.post_message(Opened())

    def _report(self, text: str) -> None:
        if not self.started:
            self.app.query_one("#banner", Banner).show(text, "info")

    async def opened(self) -> None:
        """(The App's `Opened`) What waited for the session goes, in order: what was sent, then
        the keys held."""
        banner = self.app.query_one("#banner", Banner)
        if banner.severity == "info" and not banner.has_class("-hidden"):
            banner.hide()
        self.started = True
        self.start_seconds = time.perf_counter() - self._created_at
        gc.enable()  # off since the start (treechat.tui.run); storage.gc_policy from now on
        held = self.sending.held
        while held:  # before the held keys: a key held holds everything after it
            request = held[0]
            if isinstance(request, Composer.Submitted):
                await self.sending.submit(request)  # shown as "sending" until it went out
            else:
                await self.host.typed_command(request)
            held.pop(0)
            self.sending.show_queue()
        self._release_held()
        self.host.after_start()
        self._idle_check = self.app.set_interval(IDLE_S, self._preload_when_idle)

    def _release_held(self) -> None:
        """The held keys go through the App's queue again, in order: each is handled as if it
        came now, after what the one before it did (a dialog it opened is there for the next).
        Keys that come meanwhile wait behind them."""
        held, self._held = self._held, []
        self._releasing = bool(held)
        for key in held:
            again = events.Key(key.key, key.character)
            self._released.add(id(again))
            self.app.post_message(again)
        if held:
            self.app.post_message(Released())

    def released_all(self) -> None:
        """(The App's `Released`) What came while they went through, if anything."""
        self._release_held()

    def _preload_when_idle(self) -> None:
        if self.host.chat.is_running or time.monotonic() - self.host.last_key_at < IDLE_S:
            return
        if self._idle_check is not None:
            self._idle_check.stop()
        self._import_later(LATER_MODULES)

    def _import_later(self, names: tuple[str, ...], optional: bool = False) -> Worker[None]:
        async def later() -> None:  # (made when the worker starts: one cancelled before leaves nothing unawaited)
            await import_in_background(names, optional=optional)

        return self.app.run_worker(later, group="start", exit_on_error=False)

    # ------------------------------------------------------------ what waits for the session

    def hold_key(self, event: events.Key) -> bool:
        """Before the session is open: True when `event` waits (see the module's docstring)."""
        if id(event) in self._released:
            self._released.discard(id(event))
            return False
        if self._releasing:
            self._held.append(event)
            return True
        if self.started:
            return False
        app = self.app
        if not self._held:
            composer = app.query(Composer)
            bound = app.screen.active_bindings.get(event.key)
            acted_on_above = bound is not None and bound.node in (app, app.screen)
            if composer and composer.first().has_focus and not acted_on_above:
                return False
            if bound is not None and acted_on_above and bound.binding.action == "quit" and self.nothing_to_keep():
                return False  # quits at once (interrupt/): a store slow to open holds nobody
        self._held.append(event)
        return True

    def nothing_to_keep(self) -> bool:
        """Nothing typed, sent or waiting: quitting before the session opens loses nothing."""
        composer = self.app.query(Composer)
        return not self.sending.held and not self._held and not (composer and composer.first().text.strip())
