"""JSON from outside (a repository's `.mcp.json`, a server's answer, a model's tool arguments),
parsed within bounds of bytes and depth.

`json.loads` recurses once per nesting level: `[[[[…` a few thousand deep raised RecursionError
(which no `except ValueError` catches) in `-p`, `treechat mcp` and the app, and a value a few
hundred deep that did parse failed later, wherever it was copied, dumped or validated. Here the
depth is measured before the parse, on the text without its strings (C-speed regexes, then a
loop over the brackets only when there are more brackets than the bound allows), and a text over
the bound is refused with a `JsonBoundError`: a `ValueError` whose words follow the file's name,
so every caller that reports a broken file reports this one the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any, AnyStr, TypeAlias

# JSON as parsed from outside, before its reader has looked at it: the reader checks each value's
# kind where it uses it (a server's chunk, a file), so this says "JSON", not what is in it (what
# treechat builds or keeps is `treechat.storage.json_types.Json`, checked all the way down).
RawJson: TypeAlias = Any
RawObject: TypeAlias = dict[str, RawJson]  # an object as parsed (its keys are strings: JSON's)

MAX_DEPTH = 64  # objects and lists inside each other: configuration and protocol JSON needs a handful

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_B = re.compile(rb"[^\[\]{}]+")


class JsonBoundError(ValueError):
    """JSON over a bound (bytes or depth); the text says which, in words that follow a file's name."""


def too_deep(text: str | bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests objects and lists more than `max_depth` deep (strings ignored)."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= max_depth:  # the common case: nothing to measure
            return False
        skeleton: str | bytes = _NOT_BRACKET.sub("", _cut_open_string(_STRING.sub("", text), '"'))
        opening: tuple[str | int, ...] = ("[", "{")
    else:
        if text.count(b"[") + text.count(b"{") <= max_depth:
            return False
        skeleton = _NOT_BRACKET_B.sub(b"", _cut_open_string(_STRING_B.sub(b"", text), b'"'))
        opening = (ord("["), ord("{"))
    depth = 0
    for ch in skeleton:
        if ch in opening:
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def _cut_open_string(skeleton: AnyStr, quote: AnyStr) -> AnyStr:
    # what is left of a string that never ends is not JSON: json.loads says so, not the depth
    at = skeleton.find(quote)
    return skeleton if at < 0 else skeleton[:at]


def loads(text: str | bytes | bytearray, *, max_bytes: int | None = None, max_depth: int = MAX_DEPTH) -> RawJson:
    """`json.loads(text)` unless the text is over `max_bytes` (None: bounded by the caller) or
    nests deeper than `max_depth`: then JsonBoundError. Other errors are json's ValueErrors."""
    data = bytes(text) if isinstance(text, bytearray) else text
    if max_bytes is not None and len(data) > max_bytes:
        raise JsonBoundError(f"is over {_size(max_bytes)}")
    if too_deep(data, max_depth):
        raise JsonBoundError(f"nests objects and lists more than {max_depth} deep")
    try:
        return json.loads(data)
    except RecursionError:  # (cannot happen after the check above; kept as the last line of defence)
        raise JsonBoundError(f"nests objects and lists more than {max_depth} deep") from None


def _size(n: int) -> str:
    return f"{n // 1_000_000} MB" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000:,} KB"


__all__ = ["MAX_DEPTH", "JsonBoundError", "RawJson", "RawObject", "loads", "too_deep"]
