"""An ACP prompt (a list of content blocks) as treechat sends one: the text, and the images.

- text goes as it is (`@path` and `/template` in it work as in the app);
- an image (PNG, JPEG, GIF, WebP, up to 5 MB) becomes an image of the message;
- an embedded text resource (an editor's `@file` mention with its content) goes in as an attached
  file does, `<file path="…">`, after the text (the mention keeps its place as the path); up to
  100 KB, like an attachment;
- a resource link names the file where it was mentioned (the model may read it);
- audio and binary resources other than images are refused: one sentence, nothing is sent.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from treechat.prompts.attachments import MAX_IMAGE_BYTES, MAX_TEXT_BYTES
from treechat.storage.model import ImageContent
from treechat.text.attached import file_block
from treechat.text.images import human_size, image_mime

Block = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock


class PromptError(ValueError):
    """A block that cannot be sent; the message is one sentence."""


@dataclass
class Prompt:
    text: str
    images: list[ImageContent] = field(default_factory=list)


def shown_uri(uri: str, cwd: str) -> str:
    """A `file://` URI as a path (relative to `cwd` inside it); any other URI as it is."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return uri
    path = unquote(parts.path)
    inside = path == cwd or path.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(path, cwd) if inside and path != cwd else path


def _image(data: str, mime: str, what: str) -> ImageContent:
    if len(data) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        raise PromptError(f"{what} is over {human_size(MAX_IMAGE_BYTES)}; images that large cannot be sent.")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise PromptError(f"{what} is not base64 data.") from None
    found = image_mime(raw[:12])
    if found is None:
        raise PromptError(f"{what} ({mime}) is not a PNG, JPEG, GIF or WebP image.")
    return ImageContent(data=base64.b64encode(raw).decode("ascii"), mime_type=found)


def _file(resource: TextResourceContents, cwd: str) -> tuple[str, str]:
    shown = shown_uri(resource.uri, cwd)
    size = len(resource.text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise PromptError(f"{shown} is {human_size(size)}; text over {human_size(MAX_TEXT_BYTES)} cannot be "
                          "attached (ask the model to read parts of it instead).")
    return shown, resource.text


def read_prompt(blocks: Sequence[Block], cwd: str) -> Prompt:
    """The text and images of an ACP prompt. Raises PromptError, naming the block."""
    words: list[tuple[str, bool]] = []  # (text, a mention)
    files: list[tuple[str, str]] = []
    images: list[ImageContent] = []
    for block in blocks:
        match block:
            case TextContentBlock():
                words.append((block.text, False))
            case ImageContentBlock():
                images.append(_image(block.data, block.mime_type, "An image"))
            case ResourceContentBlock():
                words.append((shown_uri(block.uri, cwd), True))
            case EmbeddedResourceContentBlock(resource=TextResourceContents() as resource):
                shown, text = _file(resource, cwd)
                words.append((shown, True))
                if all(shown != s for s, _ in files):
                    files.append((shown, text))
            case EmbeddedResourceContentBlock(resource=BlobResourceContents() as blob):
                shown = shown_uri(blob.uri, cwd)
                if not (blob.mime_type or "").startswith("image/"):
                    raise PromptError(f"{shown} is binary ({blob.mime_type or 'no type'}); only text files and "
                                      "PNG, JPEG, GIF or WebP images can be attached.")
                words.append((shown, True))
                images.append(_image(blob.blob, blob.mime_type or "", shown))
            case AudioContentBlock():
                raise PromptError("Audio cannot be sent: treechat's models take text and images.")
    text = _joined(words)
    blocks_text = [file_block(shown, content) for shown, content in files]
    if blocks_text:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + "\n\n".join(blocks_text)
    return Prompt(text, images)


def _joined(words: list[tuple[str, bool]]) -> str:
    """Text blocks as they were written; a mention gets a space on each side it needs one."""
    out, after_mention = "", False
    for word, mention in words:
        if (mention or after_mention) and out and word and not out[-1].isspace() and not word[0].isspace():
            out += " "
        out += word
        after_mention = mention
    return out


__all__ = ["Prompt", "PromptError", "read_prompt", "shown_uri"]
