"""How a skill or a prompt template lives inside a user message (issue 37), so the transcript, the
exports, `e` (edit and resend) and ↑ show what the person typed and one row for the rest.

- A skill (`/skill NAME text`, Pi's `/skill:NAME text`) is Pi's block at the start of the text,
  `<skill name="NAME" location="PATH">…</skill>`, then what the person typed. It is read from the
  text itself, so a message Pi wrote, or an older treechat, reads the same way.
- A prompt template (`/review foo.py`) leaves no trace in its text: its body is the message. The
  message carries what was typed beside it, `"treechat": {"template": "review", "typed":
  "/review foo.py"}`: an unknown field to Pi, which keeps it and never sends it (every model keeps
  unknown fields, storage/model.py), as the providers never send it (they send the content).

Either way what goes to the model is the text, unchanged; search finds every word of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .attached import split_file_blocks

if TYPE_CHECKING:
    from treechat.storage.model import ImageContent, UserMessage

FIELD = "treechat"  # the user message's own field for what it was expanded from

_SKILL_HEAD = re.compile(r'<skill name="([^"\n]*)" location="[^"\n]*">$')
_SKILL = re.compile(r'<skill name="([^"\n]*)" location="([^"\n]*)">\n(.*?)\n</skill>(?:\n\n|\Z)', re.S)


@dataclass(frozen=True)
class Expanded:
    """A skill's or template's message, as a person sees it."""

    kind: Literal["skill", "template"]
    name: str
    typed: str  # what the person typed: a skill's words after its block; a template's command line
    body: str  # what it put into the message: the skill's instructions; the template's text


def template_message(text: str, images: Sequence[ImageContent], name: str, typed: str) -> UserMessage:
    """A template's user message: its text and images, and what was typed (`/review foo.py`)."""
    from treechat.storage.model import TextContent, UserMessage

    mark: dict[str, Any] = {FIELD: {"template": name, "typed": typed}}  # an unknown field, passed by its name
    return UserMessage(content=[TextContent(text=text), *images], **mark)


def expanded(text: str, extra: object = None) -> Expanded | None:
    """What `text` (a user message's text; its attached files already split off, if wanted) was
    expanded from, with `extra` the message's unknown fields (`model_extra`); None: typed as it is."""
    mark = extra.get(FIELD) if isinstance(extra, dict) else None
    if isinstance(mark, dict) and isinstance(mark.get("template"), str) and isinstance(mark.get("typed"), str):
        return Expanded("template", mark["template"], mark["typed"], text)
    found = _SKILL.match(text)
    if found is None:
        return None
    return Expanded("skill", found.group(1), text[found.end():], found.group(3))


def expanded_message(message: object) -> tuple[Expanded | None, list[tuple[str, str]]]:
    """(what a user message was expanded from, its attached files), from the message itself."""
    from treechat.storage.model import UserMessage, message_text

    if not isinstance(message, UserMessage):
        return None, []
    typed, files = split_file_blocks(message_text(message))
    return expanded(typed, message.model_extra), files


def skill_line(line: str) -> str | None:
    """A skill message's first line (what the tree's preview of it is), as the command that made
    it (`/skill:pdf`); None for any other line."""
    found = _SKILL_HEAD.match(line.strip())
    return f"/skill:{found.group(1)}" if found else None


def as_typed(message: object) -> str | None:
    """A skill's or template's message as it would be typed again (`e`, ↑): the command that makes
    it (the skill's file or the template is read again when it is sent); None for any other."""
    found, _ = expanded_message(message)
    if found is None:
        return None
    if found.kind == "template":
        return found.typed
    return f"/skill:{found.name} {found.typed}".rstrip()


__all__ = ["FIELD", "Expanded", "as_typed", "expanded", "expanded_message", "skill_line", "template_message"]
