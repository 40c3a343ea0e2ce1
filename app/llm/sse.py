"""Server-sent events decoding over raw bytes.

Lines end only at CR, LF or CRLF (the SSE spec). `str.splitlines` — and so httpx's
`aiter_lines` — also breaks on U+2028, U+2029 and U+0085, which models emit raw inside JSON
strings; that would cut a `data:` line in pieces. So we split bytes ourselves and decode per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncIterable, AsyncIterator


@dataclass(frozen=True)
class SSEEvent:
    event: str  # "message" when the server sent no `event:` field
    data: str
    id: str | None = None


class SSEDecoder:
    """Feed it bytes in any chunking; it returns complete events in order."""

    def __init__(self) -> None:
        self._buffer = b""
        self._pending_cr = False  # a CR ended the last chunk: a following LF belongs to it
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        buf = self._buffer + chunk
        start = 0
        i = 0
        n = len(buf)
        while i < n:
            byte = buf[i]
            if byte == 0x0A or byte == 0x0D:  # LF or CR
                self._line(buf[start:i].decode("utf-8", errors="replace"), events)
                if byte == 0x0D:
                    if i + 1 < n:
                        if buf[i + 1] == 0x0A:
                            i += 1
                    else:
                        self._pending_cr = True
                start = i + 1
            i += 1
        self._buffer = buf[start:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line is still delivered (lenient)."""
        events: list[SSEEvent] = []
        if self._buffer:
            self._line(self._buffer.decode("utf-8", errors="replace"), events)
            self._buffer = b""
        self._line("", events)
        return events

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if line == "":
            if self._data:
                out.append(SSEEvent(self._event or "message", "\n".join(self._data), self._id))
            self._event, self._data = "", []
            return
        if line.startswith(":"):  # comment / keep-alive
            return
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
