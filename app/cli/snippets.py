"""A search hit's snippet as one line of `treechat search`.

The search wraps the first match of a snippet in ``[[ ]]`` (storage.base.SearchHit); the TUI
restyles it. Printed as they are, the brackets read as part of the text. So the line is made safe
first (control characters as placeholders, whitespace collapsed), then the match is shown in bold
reverse video on a colour terminal, or left unmarked where the output is a pipe, a file, `NO_COLOR`
or a dumb terminal (plain text, what grep and awk expect). `--raw` prints the snippet as stored,
brackets included.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from treechat.text.sanitize import visible_line

MARK_ON, MARK_OFF = "\x1b[1;7m", "\x1b[22;27m"  # bold + reverse, then both off (not a full reset)
OPEN, CLOSE = "[[", "]]"


def colour_wanted(stream: TextIO) -> bool:
    """Highlight on this stream? A terminal, no NO_COLOR (https://no-color.org), not TERM=dumb."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False
    return tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM", "") != "dumb"


def snippet_line(snippet: str, limit: int = 100, *, raw: bool = False, colour: bool | None = None) -> str:
    """The snippet on one line of at most `limit` visible characters, the match kept in view."""
    if raw:
        return " ".join(snippet.split())[:limit]  # as stored, on one line
    line = visible_line(snippet)  # safe before anything of ours is added
    start = line.find(OPEN)
    end = line.find(CLOSE, start + len(OPEN)) if start >= 0 else -1
    if end < 0:
        return visible_line(line, limit)
    before, match, after = line[:start], line[start + len(OPEN) : end], line[end + len(CLOSE) :]
    if len(before) >= limit:
        return visible_line(before + match + after, limit)
    if len(before) + len(match) + len(after) > limit:
        # the search puts the match ~32 characters in, so cutting the tail keeps it in view
        room = limit - len(before) - len(match)
        if room >= 1:
            after = after[: room - 1] + "…"
        else:
            match, after = match[: max(limit - len(before) - 1, 0)] + "…", ""
    if colour if colour is not None else colour_wanted(sys.stdout):
        return f"{before}{MARK_ON}{match}{MARK_OFF}{after}"
    return before + match + after
