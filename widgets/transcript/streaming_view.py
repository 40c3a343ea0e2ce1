"""StreamingView: the assistant message while it is being generated (owned by ``Transcript``).

Snapshots of the message arrive as often as the provider sends tokens; we keep only the latest
and draw it at most ~10 times a second (~3 while you type: the keys' frames go first). The text
goes into a ``StreamedMarkdown``, which renders only the block being written (finished blocks
keep their lines) and asks for a layout only when it outgrows the room it keeps: a redraw is a
repaint of this view, its cost that of the new text, and a keystroke never waits behind a
relayout of the whole transcript (issue 26). The header's spinner and the thinking line are
repainted, not laid out, for the same reason. It draws with the settled message's Rich
Markdown, so nothing changes look when the reply is done.
"""

from __future__ import annotations

import time

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from treechat.storage.model import AssistantMessage, TextContent, ThinkingContent, ToolCall
from treechat.text.model_names import shown_model_id
from treechat.text.sanitize import sanitize

from .long_text import SHOWN_CHARS, head_of
from .markdown_body import is_dark, markdown
from .message_view import tool_call_summary
from .streamed_markdown import StreamedMarkdown

FRAME = 1 / 10  # seconds between redraws while streaming
# While you type, the keys' frames go first. A redraw is done right after the frame of a key
# (the App says a key came: `key_typed`), at most every TYPING_FRAME seconds: done at its own
# time, its frame took the frame slot (Textual draws at most 60 frames a second) that the next
# key's frame then waited for, up to 17 ms more for that key; done in the key's frame, that key
# waited for it. A redraw that needs a layout (the text outgrew the room its view keeps) is put
# off while a key came in the last TYPING_HOLD seconds, but never for longer than MAX_HOLD (the
# reply still moves). The App says when the newest key arrived (`last_key_at`,
# time.monotonic()); without one nothing is put off, and keys that do not say so (a host
# without `key_typed`) still see a redraw every UNTYPED_FRAME.
TYPING_HOLD = 0.15
MAX_HOLD = 2.0
TYPING_FRAME = 0.3
UNTYPED_FRAME = 0.6
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WAIT_FRAME = 0.1  # seconds between redraws of the wait before the first token (the header alone)


class StreamingView(Vertical):
    """Header, thinking (one line unless shown), the Markdown text, one line per tool call."""

    DEFAULT_CSS = """
    StreamingView { height: auto; padding: 0 1; margin-bottom: 1; }
    StreamingView > .message-header { color: $text-muted; }
    StreamingView > .thinking { color: $text-muted; text-style: italic; }
    StreamingView > .tool { color: $text-muted; }
    StreamingView > StreamedMarkdown { margin: 0; padding: 0; }
    """

    def __init__(self, show_thinking: bool = False) -> None:
        super().__init__(classes="message -role-assistant -streaming")
        self.show_thinking = show_thinking
        self.written = ""  # sanitized text already handed to the stream
        self.latest: AssistantMessage | None = None
        self._scheduled = False
        self._frame = 0
        self._room_since = 0.0  # when the text first needed more room than the body has (0: it fits)
        self._drawn_at = 0.0  # time.monotonic() of the last redraw
        self._dirty = False  # a snapshot came since the last redraw
        self._after_key = False  # a redraw waits for the frame of the key that came
        self._tool_lines = 0
        self._thinking_shown: bool | None = None  # as drawn last: whole (True) or one line (False)
        self._dark = True
        self._more_shown = False  # the header says the reply is longer than what is drawn
        self._mounted_at = 0.0
        self.header = Static(Content("assistant ⠋ waiting for the reply"), classes="message-header")
        self.thinking = Static("", classes="thinking")
        self.body = StreamedMarkdown(self._render_block, classes="body")
        self.tools = Static("", classes="tool")

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.thinking
        yield self.body
        yield self.tools

    def on_mount(self) -> None:
        self.thinking.display = False
        self.tools.display = False
        self._dark = is_dark(self)
        self._mounted_at = time.monotonic()
        if self.latest is not None:
            self._schedule()
        # until the reply says something, the wait is shown and counted (the request went out, or
        # the server answered and has sent nothing yet)
        self.set_timer(WAIT_FRAME, self._waiting)

    def _waiting(self) -> None:
        if _has_content(self.latest) or not self.is_mounted:
            return
        self._frame += 1
        waited = time.monotonic() - self._mounted_at
        model = sanitize(shown_model_id(getattr(self.latest, "model", "") or ""))
        self.header.update(Content(f"assistant{' · ' + model if model else ''} {SPINNER[self._frame % len(SPINNER)]} "
                                   f"waiting for the reply · {waited:.1f} s"), layout=False)
        self.set_timer(WAIT_FRAME, self._waiting)

    def _render_block(self, source: str) -> RenderableType:
        return markdown(source, dark=self._dark)

    def update_message(self, message: AssistantMessage) -> None:
        """Keep the newest snapshot; draw it on the next frame (coalescing everything between)."""
        self.latest = message
        self._dirty = True
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and self.is_mounted:
            self._scheduled = True
            self.set_timer(FRAME, self._draw)

    def _draw(self) -> None:
        self._scheduled = False
        if self.latest is None:
            return
        now = time.monotonic()
        typing = now - getattr(self.app, "last_key_at", 0.0) < TYPING_HOLD
        if typing and now - self._drawn_at < UNTYPED_FRAME:
            self._schedule()  # typing: the keys draw it (key_typed), in their frames
            return
        self._redraw(now, typing)

    def key_typed(self) -> None:
        """A key came from the terminal: a redraw that is due is done right after that key's
        frame, so that neither that key nor the next waits for it."""
        now = time.monotonic()
        if self.latest is None or now - self._drawn_at < TYPING_FRAME:
            return
        if not self._after_key and (self._dirty or (self._room_since and now - self._room_since >= MAX_HOLD)):
            self._after_key = True
            self.call_after_refresh(self._draw_after_key)

    def _draw_after_key(self) -> None:
        self._after_key = False
        if self.latest is not None:
            self._redraw(time.monotonic(), typing=True)

    def _redraw(self, now: float, typing: bool) -> None:
        message = self.latest
        self._drawn_at = now
        self._dirty = False
        blocks = getattr(message, "content", []) or []
        raw, total = head_of(b.text for b in blocks if isinstance(b, TextContent))
        text = sanitize(raw)  # (only what is drawn: a reply past SHOWN_CHARS goes on unseen)
        self.body.set_text(text)
        self.written = text
        if self.body.needs_room:
            self._room_since = self._room_since or now
            if not typing or now - self._room_since >= MAX_HOLD:
                self.body.grow()
                self._room_since = 0.0
            else:
                self._schedule()  # the lines below show once no key has come for a moment
        thinking = "".join(b.thinking for b in blocks if isinstance(b, ThinkingContent))
        if self.thinking.display != bool(thinking):
            self.thinking.display = bool(thinking)
        if thinking:
            if self.show_thinking:
                self.thinking.update(Content("▾ thinking\n" + sanitize(thinking)))
            else:  # one line whatever its length: a repaint (a layout when it was shown whole)
                self.thinking.update(Content(f"▸ thinking… ({len(thinking)} chars)"),
                                     layout=self._thinking_shown is not False)
            self._thinking_shown = self.show_thinking
        calls = [b for b in blocks if isinstance(b, ToolCall)]
        if self.tools.display != bool(calls):
            self.tools.display = bool(calls)
        if calls:
            lines = "\n".join("▸ " + tool_call_summary(c) for c in calls)
            self.tools.update(Content(lines), layout=len(calls) != self._tool_lines)
            self._tool_lines = len(calls)
        self._frame += 1
        model = sanitize(shown_model_id(getattr(message, "model", "") or ""))
        spin = SPINNER[self._frame % len(SPINNER)]
        more = f" · {total:,} characters so far, the first {SHOWN_CHARS:,} shown" if total > SHOWN_CHARS else ""
        # a repaint, unless the note past SHOWN_CHARS came or went (it may wrap the line)
        self.header.update(Content(self._header_line(model, spin, more)), layout=bool(more) != self._more_shown)
        self._more_shown = bool(more)

    def _header_line(self, model: str, spin: str, more: str) -> str:
        if not _has_content(self.latest):
            return f"assistant{' · ' + model if model else ''} {spin} waiting for the reply · " \
                   f"{time.monotonic() - self._mounted_at:.1f} s"
        return f"assistant{' · ' + model if model else ''} {spin}{more}"

    async def finish(self) -> None:
        """The settled message replaces this view (nothing runs in the background to stop)."""


def _has_content(message: AssistantMessage | None) -> bool:
    """Has the reply said anything yet (text, thinking, a tool call)?"""
    return any(not isinstance(b, TextContent | ThinkingContent) or (b.text if isinstance(b, TextContent) else b.thinking)
               for b in (message.content if message is not None else ()))
