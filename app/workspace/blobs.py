"""File contents as checkpoint blobs: named by their SHA-256, stored zlib-compressed in base64.

One blob per distinct content: a checkpoint carries only the blobs its path does not hold yet,
so every path (and a fork of it, and its Pi JSONL export) holds what it needs. Reading a blob is
bounded: it never inflates past MAX_TRACKED_BYTES.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib

ENCODING = "zlib+base64"
MAX_TRACKED_BYTES = 1024 * 1024  # a file larger than this is changed but its content not kept


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 6)).decode("ascii")


def unpack(text: str, expected: str | None = None, limit: int = MAX_TRACKED_BYTES) -> bytes | None:
    """The content of a blob, or None when it is damaged, too large, or not what its name says."""
    try:
        packed = base64.b64decode(text.encode("ascii"), validate=True)
        inflate = zlib.decompressobj()
        data = inflate.decompress(packed, limit + 1)
    except (ValueError, binascii.Error, zlib.error, UnicodeEncodeError):
        return None
    if len(data) > limit or inflate.unconsumed_tail or (expected is not None and digest(data) != expected):
        return None
    return data


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
