"""Image facts read from the file's first bytes, without an imaging library: the format, the
size and the pixel dimensions of PNG, JPEG, GIF and WebP — what providers accept and what the
transcript's image chip shows."""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

# the formats every image-capable provider takes, with their short names
IMAGE_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}


@dataclass(frozen=True)
class ImageInfo:
    mime_type: str
    size: int  # bytes
    width: int | None = None
    height: int | None = None

    @property
    def kind(self) -> str:
        return IMAGE_TYPES.get(self.mime_type, self.mime_type.removeprefix("image/").upper())

    @property
    def dimensions(self) -> str | None:
        return f"{self.width}×{self.height}" if self.width and self.height else None

    def chip(self) -> str:
        """The transcript's label for an image, e.g. "PNG · 1.2 MB · 800×600"."""
        parts = [self.kind, human_size(self.size)]
        if self.dimensions:
            parts.append(self.dimensions)
        return " · ".join(parts)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def image_mime(head: bytes) -> str | None:
    """The mime type of a supported image from its first 12 bytes, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) >= 24 and data[12:16] == b"IHDR":
        w, h = struct.unpack(">II", data[16:24])
        return w, h
    return None


def _gif_size(data: bytes) -> tuple[int, int] | None:
    if len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return w, h
    return None


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            i += 1  # not at a marker: tolerate padding and keep scanning
            continue
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2  # markers without a length
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in _SOF and i + 9 <= len(data):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        if marker == 0xDA:  # start of scan: no frame header came first
            return None
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        b = data[21:25]
        w = 1 + (b[0] | (b[1] & 0x3F) << 8)
        h = 1 + (b[1] >> 6 | b[2] << 2 | (b[3] & 0x0F) << 10)
        return w, h
    if chunk == b"VP8X" and len(data) >= 30:
        w = 1 + int.from_bytes(data[24:27], "little")
        h = 1 + int.from_bytes(data[27:30], "little")
        return w, h
    return None


_SIZERS = {"image/png": _png_size, "image/gif": _gif_size, "image/jpeg": _jpeg_size, "image/webp": _webp_size}


def image_info(data: bytes, size: int | None = None) -> ImageInfo | None:
    """Facts about an image from its bytes (the whole file, or enough of its start), or None when
    it is not a PNG, JPEG, GIF or WebP. `size` is the file size when `data` is only its start."""
    mime = image_mime(data[:12])
    if mime is None:
        return None
    dims = _SIZERS[mime](data)
    width, height = dims if dims else (None, None)
    return ImageInfo(mime_type=mime, size=len(data) if size is None else size, width=width, height=height)


def image_block_info(data_b64: str, mime_type: str) -> ImageInfo:
    """The chip facts for a stored image block (base64 data). Never raises: a block whose data
    cannot be read still gets its type and an approximate size."""
    size = len(data_b64) * 3 // 4 - data_b64[-2:].count("=") if data_b64 else 0
    try:
        head = base64.b64decode(data_b64[:65536], validate=False)  # a multiple of 4: a clean cut
        info = image_info(head, size)
        if info is not None and info.width is None and len(data_b64) > 65536:
            info = image_info(base64.b64decode(data_b64, validate=False), size)  # a JPEG with a long header
    except (binascii.Error, ValueError):
        info = None
    return info or ImageInfo(mime_type=mime_type or "image/unknown", size=size)
