"""Server-sent events decoding over raw bytes, in time linear in the input.

Lines end only at CR, LF or CRLF (the SSE spec). `str.splitlines` — and so httpx's
`aiter_lines` — also breaks on U+2028, U+2029 and U+0085, which models emit raw inside JSON
strings; that would cut a `data:` line in pieces. So we split bytes ourselves and decode per line.

Linear: each chunk is scanned once, by `bytes.find` (C speed), and an unfinished line is kept as a
list of pieces joined once when its end arrives. Re-joining a growing buffer on every chunk made a
10 MB event cost minutes (issue 15); see bench/sse.py.

Bounded: one event (its unfinished line and the data lines gathered for it) may hold at most
`max_event` bytes; past that `EventTooLarge` is raised at once, rather than gathering a server's
endless line in memory (3 GB before issue 21).
"""

from __future__ import annotations

from dataclasses import dataclass


class EventTooLarge(Exception):
    """One event grew past the decoder's `max_event` bytes (its line never ended, or it never did)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event over {limit:,} bytes")
        self.limit = limit


@dataclass(frozen=True)
class SSEEvent:
    event: str  # "message" when the server sent no `event:` field
    data: str
    id: str | None = None


class SSEDecoder:
    """Feed it bytes in any chunking; it returns complete events in order.

    `comments` counts comment lines (`: keep-alive`) seen so far: they carry no event, and the
    stream runner must not take them for progress."""

    def __init__(self, max_event: int | None = None) -> None:
        self.max_event = max_event  # bytes one event may hold (None: no bound)
        self._held = 0  # bytes of the current line's pieces and the event's data lines
        self._pieces: list[bytes] = []  # the current line so far (no terminator seen yet)
        self._pending_cr = False  # a CR ended the last chunk: a following LF belongs to it
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        start = 0
        n = len(chunk)
        if self._pending_cr and n and chunk[0] == 0x0A:
            start = 1
        if n:
            self._pending_cr = False
        lf = -1  # the next LF at or after `start`, found once per LF (CR-only lines must not rescan)
        while start < n:
            if lf < start:
                lf = chunk.find(b"\n", start)
                if lf < 0:
                    lf = n  # none in this chunk: a CR may still end lines
            cr = chunk.find(b"\r", start, lf)
            if cr < 0 and lf == n:
                self._pieces.append(chunk[start:])
                self._hold(n - start)
                break
            end = cr if cr >= 0 else lf
            self._take_line(chunk[start:end], events)
            if end == cr:
                if cr + 1 < n:
                    start = cr + 2 if chunk[cr + 1] == 0x0A else cr + 1
                else:
                    self._pending_cr = True
                    start = n
            else:
                start = lf + 1
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line is still delivered (lenient)."""
        events: list[SSEEvent] = []
        if self._pieces:
            self._take_line(b"", events)
        self._line("", events)
        return events

    def _hold(self, size: int) -> None:
        self._held += size
        if self.max_event is not None and self._held > self.max_event:
            raise EventTooLarge(self.max_event)

    def _take_line(self, tail: bytes, out: list[SSEEvent]) -> None:
        if self._pieces:
            self._pieces.append(tail)
            self._hold(len(tail))
            raw = b"".join(self._pieces)
            self._pieces = []
            self._held -= len(raw)  # counted again below if it is a data line
        else:
            raw = tail
        self._line(raw.decode("utf-8", errors="replace"), out)

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if line == "":
            if self._data:
                out.append(SSEEvent(self._event or "message", "\n".join(self._data), self._id))
            self._event, self._data, self._held = "", [], 0
            return
        if line.startswith(":"):  # comment / keep-alive
            self.comments += 1
            return
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._hold(len(value))
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
