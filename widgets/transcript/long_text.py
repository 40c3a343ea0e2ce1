"""How much of one message's text the transcript draws: a reply of 1 MB in paragraphs took 30 s
and 570 MB to draw (issue 21), for text nobody reads on a terminal. The rest stays in the session:
`y` copies all of it, `/export` writes it."""

from __future__ import annotations

from collections.abc import Iterable

SHOWN_CHARS = 100_000


def shown_text(text: str) -> tuple[str, str | None]:
    """(the part drawn, a note saying what was left out, or None)."""
    if len(text) <= SHOWN_CHARS:
        return text, None
    return text[:SHOWN_CHARS], cut_note(len(text))


def cut_note(total: int) -> str:
    return (f"… {total:,} characters in all: the first {SHOWN_CHARS:,} are shown here "
            "(y copies all of it, /export writes it)")


def head_of(parts: Iterable[str]) -> tuple[str, int]:
    """The first SHOWN_CHARS characters of the pieces joined, and their total length, without
    joining what will not be drawn."""
    head: list[str] = []
    size = total = 0
    for part in parts:
        total += len(part)
        if size < SHOWN_CHARS:
            piece = part[: SHOWN_CHARS - size]
            head.append(piece)
            size += len(piece)
    return "".join(head), total
