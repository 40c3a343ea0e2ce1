"""Print mode's stderr notes for waits: retries (with Retry-After) and a provider gone silent.

Subscribe `WaitNotes(sys.stderr)` to the agent session. On a terminal the note is one line that
counts down in place and is cleared when the wait ends; elsewhere (a log file, a pipe) each wait
is one line, written once — no countdown spam. Texts from the server pass through `sanitize`.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TextIO

from treechat.agent.events import MessageUpdate, RetryWait, StreamWait
from treechat.session.events import SessionEvent
from treechat.text.sanitize import sanitize

_CLEAR = "\r\x1b[2K"
_ENDS_WAIT = {"message_start", "message_update", "message_end", "agent_end", "retry_wait", "stream_wait"}


def describe(event: SessionEvent, remaining: float | None = None) -> str | None:
    """The note for a retry_wait / stream_wait event (`remaining`: seconds left, default the whole wait)."""
    if isinstance(event, RetryWait):
        left = event.delay_s if remaining is None else remaining
        why = _short(event.reason)
        tries = f"retry {event.attempt} of {event.max_attempts}" if event.max_attempts else f"retry {event.attempt}"
        asked = ", as the server asked" if event.retry_after else ""
        return f"treechat: retrying in {_secs(left)}{asked} ({tries}): {why}"
    if isinstance(event, StreamWait):
        who = sanitize(event.provider or "the provider")
        what = "no reply from" if event.phase == "first_byte" else "nothing more from"
        if remaining is None:
            remaining = event.limit_s - event.waited_s
        return f"treechat: {what} {who} for {_secs(event.limit_s - remaining, up=False)}; giving up in {_secs(remaining)} (Ctrl+C stops)"
    return None


class WaitNotes:
    """An agent/session listener: `asession.subscribe(WaitNotes(err))`."""

    def __init__(self, err: TextIO, *, live: bool | None = None, tick: float = 1.0) -> None:
        self.err = err
        self.live = _is_tty(err) if live is None else live
        self.tick = tick
        self._task: asyncio.Task[None] | None = None
        self._shown = False  # a live line is on screen
        self._mid_line = False  # the answer on stdout has an unfinished line (same terminal)

    def __call__(self, event: SessionEvent) -> None:
        if isinstance(event, MessageUpdate):
            ev = event.assistant_event
            if ev is not None and ev.type == "text_delta" and ev.delta:
                self._mid_line = not ev.delta.endswith("\n")
        if event.type in _ENDS_WAIT:
            self._stop()
        if not isinstance(event, (RetryWait, StreamWait)):
            return
        if not self.live:
            self._write(f"{describe(event)}\n")
            return
        if self._mid_line:  # do not draw over the streamed answer: start the note on its own line
            self._write("\n")
            self._mid_line = False
        self._task = asyncio.get_running_loop().create_task(self._count_down(event))

    async def _count_down(self, event: RetryWait | StreamWait) -> None:
        if isinstance(event, RetryWait):
            end = (event.started_at or time.monotonic()) + event.delay_s
        else:
            end = (event.started_at or time.monotonic() - event.waited_s) + event.limit_s
        try:
            while True:
                left = max(0.0, end - time.monotonic())
                self._write(_CLEAR + (describe(event, left) or ""))
                self._shown = True
                if left <= 0:
                    return
                await asyncio.sleep(min(self.tick, left))
        except asyncio.CancelledError:
            pass

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._shown:
            self._write(_CLEAR)
            self._shown = False

    def end(self, answer_text: str = "") -> None:
        """The reply is coming (or the run is over): a wait shown is over. `answer_text` is what
        was just written to stdout (a note never starts in the middle of the answer's line)."""
        if answer_text:
            self._mid_line = not answer_text.endswith("\n")
        self._stop()

    def close(self) -> None:
        """Clear a countdown still on screen (call when the run is over)."""
        self._stop()

    def _write(self, text: str) -> None:
        try:
            self.err.write(text)
            self.err.flush()
        except (OSError, ValueError):  # stderr closed: the notes are a courtesy
            pass


def _secs(seconds: float, up: bool = True) -> str:
    """Whole seconds; a countdown rounds up (it shows 1 s until the wait is over, never 0 s early)."""
    return f"{max(0, math.ceil(seconds - 1e-6) if up else int(seconds))} s"


def _short(reason: str, limit: int = 160) -> str:
    text = " ".join(sanitize(reason).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
