"""A user message in the transcript: what the person typed, then one chip per attachment."""

from __future__ import annotations

from collections.abc import Iterator

from rich.text import Text
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from treechat.storage.model import ImageContent, UserMessage, message_text
from treechat.text.attached import split_file_blocks
from treechat.text.images import image_block_info
from treechat.text.sanitize import sanitize, sanitize_line

from .long_text import shown_text


def user_parts(msg: UserMessage) -> Iterator[Widget]:
    """What the person typed, then a chip per attachment: a file by its path and size (its
    contents went to the model, not onto the screen), an image by type, size and dimensions."""
    typed, files = split_file_blocks(message_text(msg))
    if typed.strip() or not files:
        text, cut = shown_text(typed)
        yield Static(Text(sanitize(text)), classes="body")
        if cut:
            yield Static(Text(cut), classes="cut-note")
    chips = [f"📄 {sanitize_line(path, 80)} · {_lines(text)}" for path, text in files]
    if not isinstance(msg.content, str):
        chips += [f"🖼 {image_block_info(b.data, b.mime_type).chip()}" for b in msg.content
                  if isinstance(b, ImageContent)]
    if chips:
        yield Static(Content("   ".join(chips)), classes="attachments")


def _lines(text: str) -> str:
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return "1 line" if n == 1 else f"{n:,} lines"
