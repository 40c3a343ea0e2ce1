"""A response body decompressed in bounded pieces, so every byte bound counts decompressed bytes.

httpx decodes `Content-Encoding: gzip` one network read at a time, and 64 KB of gzip can stand for
64 MB: an MCP server's gzip-compressed answer passed the 16 MB bound (which counted the bytes on
the wire) and took 2 GB, and an SSE stream of compressed comments could do the same to a reply.
Here the raw body is decompressed with zlib's `max_length`, at most PIECE bytes at a time, so the
reader's own bound (an answer's bytes, an event's, a reply's) sees decompressed bytes and stops in
time. Only gzip and deflate are asked for (ACCEPT) and read; a body in another encoding, or
encoded twice, is refused with a BodyEncodingError (a ValueError) rather than read undecoded.

Works on httpx's and httpx2's responses alike (`headers`, `aiter_raw`, `aiter_bytes`).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Protocol

PIECE = 64 * 1024  # decompressed bytes handed on at a time
ACCEPT = "gzip, deflate"  # what a request says it reads (httpx also offers br and zstd when installed)
_READ = ("gzip", "x-gzip", "deflate")


class BodyEncodingError(ValueError):
    """A body in an encoding that is not read here, or damaged; the text says which."""


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...
    def aiter_raw(self) -> AsyncIterator[bytes]: ...
    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


def codings(headers: Mapping[str, str]) -> list[str]:
    """The response's content codings, in the order they were applied ("identity" left out)."""
    value = headers.get("content-encoding") or ""
    return [c for c in (part.strip().lower() for part in value.split(",")) if c and c != "identity"]


def body_chunks(response: _Response) -> AsyncIterator[bytes]:
    """The response's body, decompressed PIECE bytes at a time at most (see the module)."""
    found = codings(response.headers)
    return decoded(response.aiter_raw(), found) if found else response.aiter_bytes()


async def decoded(raw: AsyncIterable[bytes], found: list[str]) -> AsyncIterator[bytes]:
    """`raw` decompressed (one gzip or deflate coding), in pieces of at most PIECE bytes."""
    if len(found) != 1 or found[0] not in _READ:
        raise BodyEncodingError(f"the answer is encoded as {', '.join(found)}, which treechat does not read "
                                f"(it asks for {ACCEPT})")
    coding = found[0]
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding != "deflate" else zlib.MAX_WBITS)
    first = coding == "deflate"  # deflate is zlib-wrapped, but some servers send it raw: told by its first bytes
    async for chunk in raw:
        if first and chunk:
            first = False
            try:
                zlib.decompressobj(zlib.MAX_WBITS).decompress(chunk[:2])
            except zlib.error:
                inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        data = chunk
        while True:  # a full piece may leave more output inside zlib: asked for until a piece is short
            try:
                piece = inflate.decompress(data, PIECE)
            except zlib.error as err:
                raise BodyEncodingError(f"the answer's {coding} data is damaged ({err})") from None
            if piece:
                yield piece
            data = inflate.unconsumed_tail
            if inflate.eof or (not data and len(piece) < PIECE):
                break
        if inflate.eof:
            return  # (what follows the end of the compressed data is not read)
    try:
        rest = inflate.flush()  # (all input was taken above: at most zlib's window is left)
    except zlib.error as err:
        raise BodyEncodingError(f"the answer's {coding} data is damaged ({err})") from None
    if rest:
        yield rest


__all__ = ["ACCEPT", "PIECE", "BodyEncodingError", "body_chunks", "codings", "decoded"]
