"""What a feature of the App is handed: the `Shell`.

A feature (a folder of app/tui/: `sessions/`, `models/`, …) is a plain object made with what it
needs: the `Shell` (the controller, the main screen's widgets, the App's ways to tell, to ask and to
work in the background) and the features it calls, by name. Nothing holds the whole App: the App
(app.py) owns the features and routes its widgets' messages, its keys and the slash commands to
their methods. `TreechatApp` is the one `Shell` there is; tests reach a feature as `app.<feature>`.

**Asking** (`ask`): a dialog is pushed and its answer awaited *from a worker* (`run_worker`),
never from a message handler. The App's message queue delivers every key and the dialog's
dismissal; a handler awaiting the answer holds that queue, so the dialog would never hear the key
that answers it and the App would hang. Textual refuses instead (`NoActiveWorker`). A feature
method that asks is therefore started with `run_worker`, and a send that may ask (a file outside
the working folder: the read question) goes out from a worker for the same reason
(`composer/sending.py`). The agent's own questions (`questions/`) are panels above the composer,
asked the same way from the controller's tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.worker import Worker

    from treechat.chat import Chat
    from treechat.widgets.commands import SlashCommand
    from treechat.widgets.composer.view import Composer
    from treechat.widgets.transcript.view import Transcript
    from treechat.widgets.tree.view import TreeView

    from .questions.asking import Questions

T = TypeVar("T")
W = TypeVar("W", bound="Widget")


class Shell(Protocol):
    """The App as its features see it."""

    chat: Chat
    """The controller (set once the session is open: features are made then)."""

    questions: Questions
    """The agent's questions, one on screen at a time, and who each key belongs to."""

    last_key_at: float
    """`time.monotonic()` of the newest key from the terminal (a question nobody asked for waits for a pause)."""

    @property
    def composer(self) -> Composer: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def tree_view(self) -> TreeView: ...

    def ui(self, expect_type: type[W], selector: str | None = None) -> W:
        """A widget of the main screen, even while a dialog is on top."""
        ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast (plain text: it may quote a model's, a server's or a file's words)."""
        ...

    def show_error(self, text: str) -> None:
        """The banner's one sentence about what went wrong."""
        ...

    def clear_error(self) -> None: ...

    async def attempt(self, work: Awaitable[T]) -> T | None:
        """Run a controller call; a `ChatError` (or a `StorageError`) becomes the banner's sentence."""
        ...

    def in_background(self, work: Awaitable[object], group: str = "chat") -> None:
        """`attempt` in a worker: long controller work without holding the keys."""
        ...

    async def ask(self, screen: Screen[T]) -> T:
        """Push `screen` and wait for what it is dismissed with. Only from a worker (see above)."""
        ...

    def show(self, screen: Screen[T]) -> None:
        """Push `screen` without waiting for it (a text to read, a picker that acts by itself)."""
        ...

    def call_after_refresh(self, callback: Callable[[], object]) -> bool:
        """Call `callback` once the screen has been drawn (Textual's)."""
        ...

    def run_worker(self, work: Awaitable[T], name: str | None = "", group: str = "default", description: str = "",
                   exit_on_error: bool = True, start: bool = True, exclusive: bool = False,
                   thread: bool = False) -> Worker[T]:
        """Textual's worker: a task of the App's, cancelled when it closes."""
        ...

    async def copy(self, text: str, what: str = "") -> None:
        """To the clipboard (OSC 52 and the system's), with a notice naming `what`."""
        ...

    def command_table(self) -> list[SlashCommand]:
        """The built-in slash commands' rows (F1, `/help`, the palette)."""
        ...

    async def run_command(self, name: str, args: str) -> None:
        """The registered slash command `name`, as if typed."""
        ...
