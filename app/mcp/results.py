"""What an MCP tool call returned, as content the model can take (and the transcript can show).

- text is kept up to the limit every tool has (`truncate_head`: 2,000 lines, 50 KB), with a note;
- an image (PNG, JPEG, GIF, WebP, up to 5 MB, checked by its bytes, not its label) goes in as
  an image; anything else (audio, another kind, too large, not what it says) is a line saying so;
- a resource link is a line with its name, address and type; an embedded resource is its text
  under its address, or an image, or a line;
- `structuredContent` without any content is its JSON;
- at most MAX_BLOCKS blocks are read (an answer's objects are bounded before it is parsed, in
  `bounds.py`; this bounds the work on what was parsed): the rest are one line saying how many.

Nothing is fetched: a link is for the model to know about, not for treechat to follow.
"""

from __future__ import annotations

import base64
import binascii
import json

import mcp_types as types

from treechat.agent.tools.base import ToolResult
from treechat.agent.tools.truncate import MAX_BYTES, truncate_head
from treechat.storage.model import ImageContent, TextContent
from treechat.text.images import IMAGE_TYPES, human_size, image_mime

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_BLOCKS = 1_000  # content blocks of one result read


def convert_result(result: types.CallToolResult, tool: str) -> ToolResult:
    """A server's answer to a call as our ToolResult."""
    blocks: list[TextContent | ImageContent] = []
    texts: list[str] = []

    def text(value: str) -> None:
        texts.append(value)

    def flush() -> None:
        if texts:
            blocks.append(TextContent(text="\n".join(texts)))
            texts.clear()

    content = result.content or []
    for block in content[:MAX_BLOCKS]:
        match block:
            case types.TextContent():
                text(str(block.text))
            case types.ImageContent():
                image = _image(block.data, block.mime_type)
                if isinstance(image, str):
                    text(image)
                else:
                    flush()
                    blocks.append(image)
            case types.AudioContent():
                text(f"[audio ({block.mime_type}, {human_size(_decoded_size(block.data))}): treechat does not pass "
                     "audio to the model]")
            case types.ResourceLink():
                text(_link(block))
            case types.EmbeddedResource():
                embedded = _embedded(block.resource)
                if isinstance(embedded, ImageContent):
                    flush()
                    blocks.append(embedded)
                else:
                    text(embedded)
            case _:  # a kind a newer SDK reads
                text(f"[a {getattr(block, 'type', None) or 'content'} block treechat does not read]")
    if len(content) > MAX_BLOCKS:
        text(f"[{len(content) - MAX_BLOCKS:,} more content blocks: treechat reads the first {MAX_BLOCKS:,}]")
    if not blocks and not texts and result.structured_content is not None:
        text(json.dumps(result.structured_content, ensure_ascii=False, indent=2, default=str))
    flush()
    blocks = _bounded(blocks)
    if not blocks:
        blocks = [TextContent(text="(the tool returned nothing)")]
    return ToolResult(blocks, {"mcpTool": tool}, bool(result.is_error))


def _bounded(blocks: list[TextContent | ImageContent]) -> list[TextContent | ImageContent]:
    """Text over the limit (all text blocks together) is cut at its head, with a note."""
    budget = MAX_BYTES
    out: list[TextContent | ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContent):
            kept, cut = truncate_head(block.text, max_bytes=max(budget, 0))
            if cut and not kept and budget > 0:  # one line longer than all that may be shown: its head
                kept = block.text.encode("utf-8", "replace")[:budget].decode("utf-8", "ignore")
            budget -= len(kept.encode("utf-8", "replace"))
            if cut:
                total = len(block.text.encode("utf-8", "replace"))
                kept += (f"\n\n[Output truncated: the tool returned {human_size(total)} of text; "
                         f"the first {human_size(len(kept.encode('utf-8', 'replace')))} are shown.]")
            if kept:
                out.append(TextContent(text=kept))
        else:
            out.append(block)
    return out


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4


def _image(data: str, mime: str) -> ImageContent | str:
    label = f"{IMAGE_TYPES.get(mime, mime)} image"
    if _decoded_size(data) > MAX_IMAGE_BYTES * 1.01:
        return f"[{label} of {human_size(_decoded_size(data))}: over {human_size(MAX_IMAGE_BYTES)}, not passed on]"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{label} that is not valid base64: not passed on]"
    actual = image_mime(raw[:12])
    if actual is None:
        return f"[an image labelled {mime} that is no PNG, JPEG, GIF or WebP: not passed on]"
    if len(raw) > MAX_IMAGE_BYTES:
        return f"[{label} of {human_size(len(raw))}: over {human_size(MAX_IMAGE_BYTES)}, not passed on]"
    return ImageContent(data=data, mime_type=actual)


def _link(block: types.ResourceLink) -> str:
    parts = [f"[resource link: {block.name} <{block.uri}>"]
    if block.mime_type:
        parts.append(f" ({block.mime_type})")
    if block.description:
        parts.append(f" — {block.description}")
    return "".join(parts) + "]"


def _embedded(resource: types.TextResourceContents | types.BlobResourceContents) -> ImageContent | str:
    uri = resource.uri
    if isinstance(resource, types.TextResourceContents):
        return f"[resource {uri}]\n{resource.text}"
    mime = resource.mime_type or "application/octet-stream"
    blob = str(resource.blob)
    if mime.startswith("image/"):
        image = _image(blob, mime)
        return image if isinstance(image, ImageContent) else f"[resource {uri}] {image}"
    return f"[resource {uri}: {mime}, {human_size(_decoded_size(blob))} of data, not shown]"
