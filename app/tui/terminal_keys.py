"""Keys as terminals send them, where Textual's table falls short.

Alt+Enter: tmux, xterm, GNOME Terminal and iTerm2 (by default) send ESC CR for it. Textual's
parser knows no "\\x1b\\r" sequence, so after its escape delay it reissues the bytes as separate
keys and the Alt is lost: the documented follow-up key would steer. Registering the sequence
makes the parser report "alt+enter" at once (terminals with the kitty keyboard protocol already
send an unambiguous CSI u sequence, which Textual decodes itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import _ansi_sequences


@dataclass(frozen=True)
class _Key:
    """What the table's entries provide to the parser: a key name as `.value`."""

    value: str


EXTRA_SEQUENCES: dict[str, tuple[_Key, ...]] = {
    "\x1b\r": (_Key("alt+enter"),),
}


def register() -> None:
    table: Any = _ansi_sequences.ANSI_SEQUENCES_KEYS  # typed as a Mapping; it is the parser's dict
    for sequence, keys in EXTRA_SEQUENCES.items():
        table.setdefault(sequence, keys)
