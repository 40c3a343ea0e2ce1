"""Composer: the multi-line input at the bottom of the transcript.

Data in (from the App):
    ``running``            reactive: the agent is working (Enter then steers; Tab/Alt+Enter queue a follow-up)
    ``elsewhere``          reactive: it works on another branch than the one on screen (the hint says so)
    ``set_text(text)``     put text in to edit (e.g. an old user message); the draft it replaces goes
                           into the ↑ history and ``stashed_draft`` (``restore_draft()`` brings it back)
    ``clear_draft()``      Ctrl+C: empty the box, the text kept in the ↑ history
    ``give_back(text)``    the App could not send ``text`` (no model, unknown command): it goes back in,
                           before anything typed since
    ``set_history(texts)`` earlier prompts (kept in ``sent_history``), oldest first (Up on an empty composer walks back)

Hooks (set by the App; the composer calls them, it knows no files):
    ``completer(text, cursor) -> Completion | None``  Tab inside an ``@path`` token completes it
    ``paste_filter(pasted) -> str | None``             e.g. a dragged-in image path becomes ``@path``

Messages out:
    ``Submitted(text, kind)``  kind "send" (idle), "steer" (Enter while running) or "follow_up"
                               (Alt+Enter, Tab: the controller sends it at once when nothing runs)
    ``Command(name, args, text)``  a line starting with ``/word`` (known or not: the App says which it
                               does not know and gives the text back); ``//x`` sends "/x" as text

Keys in arrival order: Enter, Alt+Enter, Tab (running) and the newline keys are handled in the
composer's own key handler, after every character typed before them, never as an App-level
binding that would run ahead of characters still queued for the composer. The box is emptied
the moment a message is taken, so what is typed next starts a new message; if the App cannot
send it, ``give_back`` restores it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TextArea
from textual.widgets.text_area import Document

from ..commands import parse_slash
from ..keymap import bindings_for

SendKind = Literal["send", "steer", "follow_up"]  # (the controller's: treechat.chat.state.SendKind)

IDLE_HINT = "⏎ send · ⇧⏎/^J newline · ↑ history"
BUSY_HINT = "⏎ steer · ⌥⏎/Tab later · Esc stop"
ELSEWHERE_HINT = "⏎ steers the run on the other branch · Esc stop"


def parse_command(text: str) -> tuple[str, str] | None:
    """``/name args`` → ("name", "args"); None for plain text (see ``commands.parse_slash``)."""
    return parse_slash(text)


class Completion(Protocol):
    """Replace text[start:end] with `replacement`; `candidates` are what matched."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def replacement(self) -> str: ...

    @property
    def candidates(self) -> list[str]: ...


Completer = Callable[[str, int], "Completion | None"]


def _size(chars: int) -> str:
    return f"{chars / 1e6:.1f} MB" if chars >= 100_000 else f"{chars / 1e3:.0f} KB"


class Composer(TextArea):
    BINDINGS = bindings_for("composer")

    DEFAULT_CSS = """
    Composer { height: auto; min-height: 3; max-height: 12; border: round $primary 50%; }
    Composer:focus { border: round $primary; }
    Composer.-running { border: round $warning 60%; }
    Composer.-running:focus { border: round $warning; }
    """

    running: reactive[bool] = reactive(False)
    elsewhere: reactive[bool] = reactive(False)  # running, and another branch is on screen: a send steers that run

    @dataclass
    class Submitted(Message):
        """A message to send (Enter, Alt+Enter, or Tab while a reply runs)."""

        text: str
        """What was typed (the box is emptied: ``give_back`` puts it back if it is not sent)."""

        kind: SendKind
        """send (nothing runs), steer (Enter while a reply runs) or follow_up (Alt+Enter, Tab)."""

    @dataclass
    class Command(Message):
        """A line starting with ``/word`` (a command or not: the App says which it does not know)."""

        name: str
        """The word after the slash."""

        args: str
        """The rest of the line."""

        text: str = ""
        """The whole text, as typed (given back when the App cannot run it)."""

        kind: SendKind = "send"
        """As for ``Submitted``: a prompt template is sent as a message of this kind."""

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(text, id=id, classes=classes, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.sent_history: list[str] = []
        self._history_pos: int | None = None  # index into history while walking it
        self._draft_before_history = ""
        self.stashed_draft: str | None = None
        self.placed = ""  # the text the App last put in (set_text): not the person's typing while unchanged
        self.placeholder = "Message… (/help for commands)"
        self.completer: Completer | None = None
        self.paste_filter: Callable[[str], str | None] | None = None
        # characters one paste may bring (the App sets it from config.toml; a 20 MB paste took
        # 72 s at 100% CPU in the text area); a longer one is refused with a notice
        self.max_paste: int | None = 1_000_000

    def on_mount(self) -> None:
        self.border_subtitle = IDLE_HINT

    def watch_running(self, running: bool) -> None:
        self.set_class(running, "-running")
        self._show_hint()
        self.refresh_bindings()

    def watch_elsewhere(self, elsewhere: bool) -> None:
        self._show_hint()

    # ------------------------------------------------------------ data in

    def set_text(self, text: str) -> None:
        """Text put in by the App (a prompt to edit and resend, a draft coming back). What was
        typed here and is replaced is never lost: it goes into the ↑ history and `stashed_draft`."""
        from treechat.text.sanitize import visible

        text = visible(text)  # (a stored message may hold controls: never drawn raw)
        if self.text.strip() and self.text != text and self.text != self.placed:
            self.stashed_draft = self.text
            self.keep_in_history(self.text)
        self.load_text(text)
        self.placed = text
        self.move_cursor(self.document.end)
        self._history_pos = None

    @property
    def typed_draft(self) -> str:
        """What the person typed here (not text the App put in and left unchanged)."""
        return "" if self.text == self.placed else self.text

    def keep_in_history(self, text: str) -> None:
        """Remember `text` for ↑ (a draft that is cleared or replaced)."""
        if text.strip() and text not in self.sent_history[-1:]:
            self.sent_history.append(text)
        self._history_pos = None

    def bring_back(self, draft: str) -> None:
        """A draft of the person's comes back (as theirs: it is not text the App put in)."""
        self.load_text(draft)
        self.placed = ""
        self.move_cursor(self.document.end)
        self._history_pos = None

    def clear_draft(self) -> str:
        """Ctrl+C: the draft goes into the ↑ history and the box is emptied; returns what it held."""
        text = self.text
        self.keep_in_history(text)
        self.load_text("")
        self.placed = ""
        return text

    def restore_draft(self) -> None:
        if self.stashed_draft is not None:
            self.load_text(self.stashed_draft)
            self.move_cursor(self.document.end)
            self.stashed_draft = None

    def give_back(self, text: str) -> None:
        """A message the App could not send comes back, before anything typed since."""
        typed = self.text
        self.load_text(f"{text}\n{typed}" if typed.strip() else text)
        self.move_cursor(self.document.end)
        self._history_pos = None

    def set_history(self, texts: list[str]) -> None:
        self.sent_history = list(texts)
        self._history_pos = None

    # ------------------------------------------------------------ submitting

    async def on_key(self, event: events.Key) -> None:
        # Before TextArea's own key handler (Textual calls each class's, the subclass's first):
        # a key handled here stops it with prevent_default; any other goes on to it.
        key = event.key
        if key == "tab" and self._complete():
            event.stop()
            event.prevent_default()
            return
        self._show_hint()
        action = {"enter": self.action_submit, "alt+enter": self.action_follow_up,
                  "shift+enter": self.action_newline, "ctrl+j": self.action_newline}.get(key)
        if key == "tab" and self.running and self.text.strip():
            action = self.action_follow_up
        if action is not None:
            event.stop()
            event.prevent_default()
            action()

    def _complete(self) -> bool:
        """Tab in an ``@path`` token: complete it (the common part of several matches, listed
        under the box). False when the cursor is in no such token: Tab means what it always did."""
        if self.completer is None:
            return False
        document = self.document
        if not isinstance(document, Document):  # (TextArea's default, which maps index <-> location)
            return False
        cursor = document.get_index_from_location(self.cursor_location)
        found = self.completer(self.text, cursor)
        if found is None:
            return False
        start = document.get_location_from_index(found.start)
        end = document.get_location_from_index(found.end)
        self.replace(found.replacement, start, end)
        if len(found.candidates) > 1:
            self._show_hint("  ".join(found.candidates[:8]) + (" …" if len(found.candidates) > 8 else ""))
        return True

    def _show_hint(self, text: str | None = None) -> None:
        """The hint under the box: completions after a Tab, the keys otherwise."""
        idle = IDLE_HINT if not self.running else ELSEWHERE_HINT if self.elsewhere else BUSY_HINT
        self.border_subtitle = text if text else idle

    async def on_paste(self, event: events.Paste) -> None:
        # TextArea's own paste handler runs after this one unless prevent_default (calling it
        # here too pasted everything twice: issue 21)
        if self.max_paste is not None and len(event.text) > self.max_paste:
            event.stop()
            event.prevent_default()
            self.notify(f"The paste is {_size(len(event.text))}; the composer takes up to {_size(self.max_paste)} at "
                        "once (max_input_mb in config.toml). Save it to a file and attach it with @path.",
                        severity="warning", timeout=10)
            return
        token = self.paste_filter(event.text) if self.paste_filter is not None else None
        if token is None:
            from treechat.text.sanitize import visible  # (not in the first frame's imports)

            shown = visible(event.text)
            if shown == event.text:
                return  # TextArea's own handler inserts it
            # controls (an escape sequence, a C1 CSI, a bidi override) would act on the terminal
            # as they are drawn: they go in as their visible pictures, and say so
            token = shown
            self.notify("The paste held control characters: they are in as ␛, ␇ or <U+…> (what you see is sent).",
                        timeout=6)
        event.stop()
        event.prevent_default()
        self.insert(token)

    def _take(self) -> str:
        """Empty the box and remember its text in the history."""
        text = self.text
        self.keep_in_history(text)
        self.load_text("")
        self.placed = ""
        return text

    def _submit(self, kind: SendKind) -> None:
        if not self.text.strip():
            return
        text = self._take()
        command = parse_command(text)
        if command is not None:
            self.post_message(self.Command(*command, text=text, kind=kind))
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        self.post_message(self.Submitted(text, kind))

    def action_submit(self) -> None:
        self._submit("steer" if self.running else "send")

    def action_follow_up(self) -> None:
        # Always "follow_up", even when `running` still says idle: in a burst ("first" Enter, then
        # text Alt+Enter) the run the Enter started is not reflected here yet, and a "send" would
        # reach the controller as a steer. The controller sends it when nothing runs.
        self._submit("follow_up")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "tab_follow_up":
            # Tab queues only while running with something typed; otherwise it moves focus
            return self.running and bool(self.text.strip())
        return True

    def action_tab_follow_up(self) -> None:
        self.action_follow_up()

    def action_newline(self) -> None:
        self.insert("\n")

    # ------------------------------------------------------------ history

    def action_history_previous(self) -> None:
        browsing = self._history_pos is not None and self.text == self.sent_history[self._history_pos]
        if not (self.text == "" or browsing) or not self.sent_history:
            self.action_cursor_up()
            return
        if self._history_pos is None:
            self._draft_before_history = self.text
            self._history_pos = len(self.sent_history) - 1
        elif self._history_pos > 0:
            self._history_pos -= 1
        self.load_text(self.sent_history[self._history_pos])
        self.move_cursor(self.document.end)

    def action_history_next(self) -> None:
        pos = self._history_pos
        if pos is None or self.text != self.sent_history[pos]:
            self._history_pos = None
            self.action_cursor_down()
            return
        if pos + 1 < len(self.sent_history):
            self._history_pos = pos + 1
            self.load_text(self.sent_history[pos + 1])
        else:
            self._history_pos = None
            self.load_text(self._draft_before_history)
        self.move_cursor(self.document.end)
