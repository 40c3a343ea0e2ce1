"""What a slash command is to the widgets: its row (`SlashCommand`), and how `/name args` is read.

The commands themselves are registered on their handlers in the App (`treechat.tui.registry`,
`@command(...)`); the widgets are handed the rows (F1's list, the palette) and never import it.
The composer recognises a command with `parse_slash`, whatever its name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str  # typed after "/"
    title: str  # what the palette shows
    args: str  # the argument hint ("" when it takes none)
    help: str  # one line: what it does
    key: str = ""  # the key that does the same, as people write it

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


# "/word" at the start, then a space or the end: "/usr/bin/env …" and "/ path" are plain text.
_SLASH = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.S)
_PI_SKILL = re.compile(r"^/skill:([\w.-]+)(?:\s+(.*))?$", re.S | re.I)  # Pi's `/skill:name text`


def parse_slash(text: str) -> tuple[str, str] | None:
    """`/name args` → ("name", "args") for any command word, known or not (the app says when it
    does not know one); None for text that is not a command, and for `//…` (a literal slash)."""
    stripped = text.strip()
    pi = _PI_SKILL.match(stripped)
    if pi is not None:  # the same as `/skill name text`
        return "skill", f"{pi.group(1)} {pi.group(2) or ''}".strip()
    match = _SLASH.match(stripped)
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def closest(name: str, names: Sequence[str]) -> str | None:
    """The known command nearest to a mistyped one ("/modle" → "model"), if any is close."""
    found = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.6)
    if found:
        return found[0]
    prefixed = [n for n in names if n.startswith(name.lower())]
    return prefixed[0] if len(prefixed) == 1 else None
