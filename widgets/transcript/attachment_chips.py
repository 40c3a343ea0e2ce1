"""A user message in the transcript: what the person typed, the row of a skill or template it
used, then one chip per attachment."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rich.text import Text
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from treechat.storage.model import ImageContent, UserMessage, message_text
from treechat.text.attached import split_file_blocks
from treechat.text.expanded import Expanded, expanded
from treechat.text.images import image_block_info
from treechat.text.sanitize import sanitize, sanitize_line

from .long_text import shown_text


def user_parts(msg: UserMessage, fold: Callable[[Expanded], Widget] | None = None) -> Iterator[Widget]:
    """What the person typed, then the row `fold` makes of a skill or template the message used
    (its text went to the model whole: app/text/expanded.py), then a chip per attachment: a file
    by its path and size (its contents went to the model, not onto the screen), an image by type,
    size and dimensions."""
    typed, files = split_file_blocks(message_text(msg))
    used = expanded(typed, msg.model_extra) if fold is not None else None
    if used is not None:
        typed = used.typed
    if typed.strip() or not (files or used):
        text, cut = shown_text(typed)
        yield Static(Text(sanitize(text)), classes="body")
        if cut:
            yield Static(Text(cut), classes="cut-note")
    if used is not None and fold is not None:
        yield fold(used)
    chips = [f"📄 {sanitize_line(path, 80)} · {_lines(text)}" for path, text in files]
    if not isinstance(msg.content, str):
        chips += [f"🖼 {image_block_info(b.data, b.mime_type).chip()}" for b in msg.content
                  if isinstance(b, ImageContent)]
    if chips:
        yield Static(Content("   ".join(chips)), classes="attachments")


def _lines(text: str) -> str:
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return "1 line" if n == 1 else f"{n:,} lines"
