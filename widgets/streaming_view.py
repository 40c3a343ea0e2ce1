"""StreamingView: the assistant message while it is being generated (owned by ``Transcript``).

Snapshots of the message arrive as often as the provider sends tokens; we keep only the latest
and draw it at most ~20 times a second. The text goes into a Textual ``Markdown`` through
``MarkdownStream`` (appends re-parse only the last block), so the cost of a frame does not grow
with the reply and a keystroke never waits behind a token backlog (textual-peers §3.1).
"""

from __future__ import annotations

import time
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from treechat.storage.model import TextContent, ThinkingContent, ToolCall
from treechat.storage.model_names import shown_model_id

from .long_text import SHOWN_CHARS, head_of
from .message_view import tool_call_summary
from .sanitize import sanitize

FRAME = 1 / 10  # seconds between redraws while streaming (each redraw relayouts the transcript)
# While you type, the keys' frames go first: a redraw is put off while a key came in the last
# TYPING_HOLD seconds, but never for longer than MAX_HOLD (the reply still moves). The App says
# when the newest key arrived (`last_key_at`, time.monotonic()); without one nothing is put off.
TYPING_HOLD = 0.15
MAX_HOLD = 0.75
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class StreamingView(Vertical):
    """Header, thinking (one line unless shown), the Markdown text, one line per tool call."""

    DEFAULT_CSS = """
    StreamingView { height: auto; padding: 0 1; margin-bottom: 1; }
    StreamingView > .message-header { color: $text-muted; }
    StreamingView > .thinking { color: $text-muted; text-style: italic; }
    StreamingView > .tool { color: $text-muted; }
    StreamingView > Markdown { margin: 0; padding: 0; }
    """

    def __init__(self, show_thinking: bool = False) -> None:
        super().__init__(classes="message -role-assistant -streaming")
        self.show_thinking = show_thinking
        self.written = ""  # sanitized text already handed to the stream
        self.latest: Any = None
        self._scheduled = False
        self._frame = 0
        self._drawn_at = 0.0
        self._stream: MarkdownStream | None = None
        self.header = Static(Content("assistant ⠋"), classes="message-header")
        self.thinking = Static("", classes="thinking")
        self.markdown = Markdown("", classes="body")
        self.tools = Static("", classes="tool")

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.thinking
        yield self.markdown
        yield self.tools

    def on_mount(self) -> None:
        self.thinking.display = False
        self.tools.display = False
        self._stream = Markdown.get_stream(self.markdown)
        if self.latest is not None:
            self._schedule()

    def update_message(self, message: Any) -> None:
        """Keep the newest snapshot; draw it on the next frame (coalescing everything between)."""
        self.latest = message
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and self.is_mounted:
            self._scheduled = True
            self.set_timer(FRAME, self._draw)

    async def _draw(self) -> None:
        self._scheduled = False
        now = time.monotonic()
        typed = getattr(self.app, "last_key_at", 0.0)
        if now - typed < TYPING_HOLD and now - self._drawn_at < MAX_HOLD:
            self._schedule()  # a key is being drawn: this redraw (a relayout) waits a frame
            return
        self._drawn_at = now
        message = self.latest
        if message is None or self._stream is None:
            return
        blocks = getattr(message, "content", []) or []
        raw, total = head_of(b.text for b in blocks if isinstance(b, TextContent))
        text = sanitize(raw)  # (only what is drawn: a reply past SHOWN_CHARS goes on unseen)
        if text.startswith(self.written):
            delta = text[len(self.written) :]
            if delta:
                await self._stream.write(delta)
        else:  # the provider rewrote earlier text: start the document again
            await self._stream.stop()
            await self.markdown.update(text)
            self._stream = Markdown.get_stream(self.markdown)
        self.written = text
        thinking = "".join(b.thinking for b in blocks if isinstance(b, ThinkingContent))
        self.thinking.display = bool(thinking)
        if thinking:
            if self.show_thinking:
                self.thinking.update(Content("▾ thinking\n" + sanitize(thinking)))
            else:
                self.thinking.update(Content(f"▸ thinking… ({len(thinking)} chars)"))
        calls = [b for b in blocks if isinstance(b, ToolCall)]
        self.tools.display = bool(calls)
        if calls:
            self.tools.update(Content("\n".join("▸ " + tool_call_summary(c) for c in calls)))
        self._frame += 1
        model = sanitize(shown_model_id(getattr(message, "model", "") or ""))
        spin = SPINNER[self._frame % len(SPINNER)]
        more = f" · {total:,} characters so far, the first {SHOWN_CHARS:,} shown" if total > SHOWN_CHARS else ""
        self.header.update(Content(f"assistant{' · ' + model if model else ''} {spin}{more}"))

    async def finish(self) -> None:
        """Stop the stream task (the settled message replaces this view)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
