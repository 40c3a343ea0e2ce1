"""What a question asks about, drawn so that nothing in it can hide.

A command, a server's command line or a path is shown whole, but "whole" is not enough: a payload
after 60 blank lines, or after 300 spaces, is on screen and still unseen. So, besides controls
shown as placeholders (`treechat.text.sanitize.visible`):

- characters that draw nothing or look like a space (zero-width ones, no-break spaces, Unicode
  tags, a soft hyphen) are shown as ``<U+XXXX>``;
- a tab is ``⇥``; spaces at the end of a line are ``·``; a run of more spaces than indentation
  needs is one marker, ``␣×300``;
- three or more empty lines in a row are one line saying how many;
- past `MAX_CHARS`, the rest is not drawn, and the last line says how much more there is.

Everything replaced is dim, so it reads as a note about the text rather than as the text.
"""

from __future__ import annotations

import re

from textual.content import Content

from treechat.text.sanitize import visible

MAX_CHARS = 200_000  # drawn; a person reads far less, and the rest is said in numbers
BLANK_RUN = 3  # empty lines in a row from which they are one line
SPACE_RUN = 8  # spaces in a row (past a line's indentation) from which they are one marker
INDENT_MAX = 24  # leading spaces kept as they are: indentation

# Draw nothing, or look like a plain space, or carry hidden ASCII (tags): shown by code point.
_INVISIBLE = re.compile(
    "[\u00a0\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f"
    "\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000e0000-\U000e0fff]"
)
_PLACEHOLDER = re.compile(r"<U\+[0-9A-F]{4,6}>|[\u2400-\u2421]")
_SPACES = re.compile(" {" + str(SPACE_RUN) + ",}")


def shown_lines(text: str) -> list[Content]:
    """`text` as lines for a question, every invisible thing made visible (see the module)."""
    total = len(text)
    cut = text[:MAX_CHARS]
    out: list[Content] = []
    blank = 0
    for line in visible(cut).split("\n"):
        if not line.strip():
            blank += 1
            continue
        _flush_blank(out, blank)
        blank = 0
        out.append(_line(line))
    _flush_blank(out, blank)
    if total > MAX_CHARS:
        more = total - MAX_CHARS
        out.append(Content.styled(f"… and {more:,} more characters not shown ({total:,} in all)", "bold $warning"))
    return out


def _flush_blank(out: list[Content], blank: int) -> None:
    if blank >= BLANK_RUN:
        out.append(Content.styled(f"┄ {blank} empty lines ┄", "dim italic"))
    else:
        out.extend(Content("") for _ in range(blank))


def _line(line: str) -> Content:
    parts: list[Content] = []
    body = line.rstrip(" ")
    trailing = len(line) - len(body)
    indent = len(body) - len(body.lstrip(" "))
    if indent > INDENT_MAX:
        parts.append(_mark(f"␣×{indent}"))
        body = body[indent:]
    elif indent:
        parts.append(Content(body[:indent]))
        body = body[indent:]
    parts.extend(_marked(body))
    if trailing:
        parts.append(_mark("·" * trailing if trailing < SPACE_RUN else f"␣×{trailing}"))
    return Content("").join(parts)


def _marked(text: str) -> list[Content]:
    """Plain text with its invisible characters, tabs, long space runs and placeholders dimmed."""
    text = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text).replace("\t", "\u21e5")
    parts: list[Content] = []
    at = 0
    marks = sorted([*((m.start(), m.end(), m.group()) for m in _PLACEHOLDER.finditer(text)),
                    *((m.start(), m.end(), f"␣×{len(m.group())}") for m in _SPACES.finditer(text)),
                    *((i, i + 1, "\u21e5") for i, ch in enumerate(text) if ch == "\u21e5")])
    for start, end, shown in marks:
        if start < at:
            continue
        parts.append(Content(text[at:start]))
        parts.append(_mark(shown))
        at = end
    parts.append(Content(text[at:]))
    return parts


def _mark(text: str) -> Content:
    return Content.styled(text, "dim reverse")
