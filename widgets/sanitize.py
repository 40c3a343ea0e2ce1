"""Make untrusted text (model, tool, file output) safe to put on the terminal.

Everything a model or a tool produced goes through :func:`sanitize` before it reaches a
renderable. Escape sequences are removed whole (so ``\\x1b[31mred`` shows as ``red`` and an OSC 52
clipboard write or a ``\\x1b[2J`` clear-screen never reaches the terminal); other C0/C1 controls
are dropped, except newline and tab. Bidi overrides are dropped too: they can make displayed text
differ from what a command really does ("trojan source").
"""

from __future__ import annotations

import re

# One alternation, longest forms first:
#  - CSI: ESC [ params intermediates final (also the 8-bit CSI \x9b)
#  - OSC / DCS / SOS / PM / APC strings: up to BEL or ST (ESC \ or \x9c), or to the end when unterminated
#  - any other two-character ESC sequence (ESC followed by one byte), or a lone ESC at the end
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
# What is left after sequences are gone: C0 (but \t \n), DEL, C1, bidi embedding/override/isolate.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def sanitize(text: object) -> str:
    """Text with every escape sequence and control character (except \\n and \\t) removed.

    ``\\r\\n`` becomes ``\\n``; a lone ``\\r`` (progress-bar redraws) is dropped. Non-strings are
    converted with ``str()`` first, so a tool's odd return value cannot crash a render.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not _CONTROL.search(text):  # the common case: nothing to do, no copies
        return text
    text = text.replace("\r\n", "\n")
    text = _SEQUENCE.sub("", text)
    return _CONTROL.sub("", text)


def sanitize_line(text: object, limit: int | None = None) -> str:
    """One display line: sanitized, whitespace runs (newlines included) collapsed to one space."""
    line = " ".join(sanitize(text).split())
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line
