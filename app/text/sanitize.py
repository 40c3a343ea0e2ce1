"""Make untrusted text (model, tool, file output) safe to put on the terminal.

Everything a model or a tool produced goes through :func:`sanitize` before it reaches a
renderable. Escape sequences are removed whole (so ``\\x1b[31mred`` shows as ``red`` and an OSC 52
clipboard write or a ``\\x1b[2J`` clear-screen never reaches the terminal); other C0/C1 controls
are dropped, except newline and tab. Bidi overrides are dropped too: they can make displayed text
differ from what a command really does ("trojan source").

Text that leaves through stdout, stderr or a file we do not draw goes through :func:`visible` (or
:func:`visible_line`) instead: the same characters are replaced by visible placeholders ("␛", "␇",
"<U+202E>") rather than removed, so a reader sees that something was there. Serialized JSON goes
through :func:`json_for_terminal`.
"""

from __future__ import annotations

import re
from functools import cache

from treechat.storage.well_formed import well_formed_text

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
# Characters sanitize must look at: the controls, and UTF-16 surrogates (an emoji's pair split over
# two stream deltas, or half a pair), which the terminal's UTF-8 output cannot encode.
_NEEDS_WORK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def sanitize(text: object) -> str:
    """Text with every escape sequence and control character (except \\n and \\t) removed.

    ``\\r\\n`` becomes ``\\n``; a lone ``\\r`` (progress-bar redraws) is dropped. Non-strings are
    converted with ``str()`` first, so a tool's odd return value cannot crash a render.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not _NEEDS_WORK.search(text):  # the common case: nothing to do, no copies
        return text
    text = well_formed_text(text)  # a split pair becomes its character, half a pair U+FFFD
    text = text.replace("\r\n", "\n")
    text = _SEQUENCE.sub("", text)
    return _CONTROL.sub("", text)


def sanitize_line(text: object, limit: int | None = None) -> str:
    """One display line: sanitized, whitespace runs (newlines included) collapsed to one space."""
    line = " ".join(sanitize(text).split())
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line


# ---------------------------------------------------------------- visible mode
# Text that leaves through stdout/stderr or into a file (print mode, CLI listings, error lines, the
# Markdown export) is not drawn by us, so it cannot be styled away: every control is replaced by a
# visible stand-in instead of vanishing, and a reader sees that something was there. ESC becomes
# "␛", which leaves the rest of its sequence as harmless printable text; other C0 controls become
# their Unicode control pictures; DEL, C1 controls (the 8-bit CSI \x9b among them), bidi
# embeddings/overrides/isolates and lone surrogates (they would make writing to a UTF-8 stream fail;
# a well-formed pair is joined into its character first) become "<U+XXXX>". "\r\n" becomes "\n" and a lone "\r" a newline too: it must not return to the
# start of a line and hide what was written there.
_VISIBLE_NEEDED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@cache
def _identity() -> list[int]:
    return list(range(0xE000))


@cache  # built on first use: most runs never meet a control character
def _visible_table() -> list[int | str]:
    # A list indexed by code point (not a dict): str.translate then looks every character up
    # without raising KeyError for the ones it keeps, which makes a 10 MB text cost ~0.2 s, not ~3.
    table: list[int | str] = [*_identity()]
    for code in range(0x20):
        table[code] = chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC, ␇ for BEL)
    table[0x09], table[0x0A], table[0x0D] = 0x09, 0x0A, "\n"
    table[0x7F] = "\u2421"  # ␡
    for code in (*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000)):
        table[code] = f"<U+{code:04X}>"
    return table


def visible(text: object) -> str:
    """Text for a terminal or a file we do not draw: controls shown as placeholders, not removed.

    ``\\x1b]52;c;…\\x07`` becomes ``␛]52;c;…␇``, ``\\x9b`` becomes ``<U+009B>``, ``\\u202e`` becomes
    ``<U+202E>``; ``\\n`` and ``\\t`` stay. Linear in the length of the text. Non-strings are
    converted with ``str()`` first.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not _VISIBLE_NEEDED.search(text):  # the common case: nothing to do, no copies
        return text
    if _SURROGATE.search(text):  # a pair that JSON escaped in two halves is one character: join it
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text.replace("\r\n", "\n").translate(_visible_table())


def visible_line(text: object, limit: int | None = None) -> str:
    """One output line (a listing row, an error message): :func:`visible`, whitespace runs (newlines
    included) collapsed to one space, cut to `limit` characters with "…"."""
    line = " ".join(visible(text).split())
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line


# JSON text written with ensure_ascii=False escapes C0 controls but keeps DEL, C1 controls, bidi
# overrides and lone surrogates as they are. They can only stand inside JSON strings, so writing
# them as \uXXXX escapes keeps the same JSON value and keeps the terminal safe.
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@cache
def _json_table() -> list[int | str]:
    table: list[int | str] = [*_identity()]
    for code in (0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000)):
        table[code] = f"\\u{code:04x}"
    return table


def json_for_terminal(json_text: str) -> str:
    """Serialized JSON with the characters a terminal would act on written as ``\\uXXXX`` escapes
    (the parsed value is unchanged). Linear in the length of the text."""
    if not _JSON_UNSAFE.search(json_text):
        return json_text
    return json_text.translate(_json_table())
