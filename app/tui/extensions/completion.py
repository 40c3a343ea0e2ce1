"""Tab at the start of the composer: a slash command's name (built-in or a prompt template), then
what its registration offers for its arguments (asked of the controller when Tab is pressed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treechat.chat import Chat

    from ..registry import Command


@dataclass(frozen=True)
class SlashCompletion:
    """Replace text[start:end] with `replacement`; `candidates` are what matched (the composer's
    `Completion`)."""

    start: int
    end: int
    replacement: str
    candidates: list[str]


def complete(text: str, cursor: int, commands: Mapping[str, Command], templates: Sequence[str],
             chat: Chat) -> SlashCompletion | None:
    """After `/na` the names of `commands` and `templates`; after `/name ar` the argument texts
    the command's registration offers; None when the cursor is not in a command's first line."""
    head = text[:cursor]
    if not head.startswith("/") or head.startswith("//") or "\n" in head:
        return None
    name, space, typed = head[1:].partition(" ")
    if space:
        registered = commands.get(name.lower())
        choices = list(dict.fromkeys(registered.complete(chat))) if registered and registered.complete else []
        return _completion(cursor - len(typed), cursor, typed, choices, prefix="")
    names = sorted({*commands, *templates})
    return _completion(0, cursor, name.lower(), names, prefix="/")


def _completion(start: int, end: int, typed: str, choices: list[str], *, prefix: str) -> SlashCompletion | None:
    """The one match and a space, or the common part of several (listed under the box)."""
    matches = [c for c in choices if c.lower().startswith(typed.lower())]
    if not matches:
        return None
    if len(matches) == 1:
        return SlashCompletion(start, end, f"{prefix}{matches[0]} ", [f"{prefix}{matches[0]}"])
    common = matches[0]
    for m in matches[1:]:
        while not m.lower().startswith(common.lower()):
            common = common[:-1]
    return SlashCompletion(start, end, f"{prefix}{common}", [f"{prefix}{m}" for m in matches])
