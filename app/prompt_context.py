"""One call for a front end about to send a prompt: the system prompt for its tools and settings,
and the prompt with its `@path` and `-a` attachments resolved (text files inlined, images as
blocks). Print mode calls `prepare_prompt` once; the app keeps the builder and calls
`expand_prompt` per message (see app/attachments.py and app/session/system_prompt.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from treechat.storage.model import ImageContent

from .attachments import Attachment, expand_prompt
from .session.system_prompt import SystemPromptBuilder


@dataclass
class PreparedRequest:
    system_prompt: str  # built for `tools`; bind `builder` to the session for the tools it activates
    text: str
    builder: SystemPromptBuilder
    images: list[ImageContent] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)


def prepare_prompt(prompt: str, *, settings: Any, tools: Sequence[Any] = (), cwd: str | os.PathLike[str] | None = None,
                   system: str | None = None, attach: Sequence[str] = ()) -> PreparedRequest:
    """The system prompt (treechat's, the tools, folder, date, config `system_prompt`, `system`
    from `--system`, AGENTS.md files) and the user message. Raises AttachmentError (one sentence)
    when a named file cannot be attached; nothing has been sent or stored then."""
    folder = str(cwd or os.getcwd())
    builder = SystemPromptBuilder.from_settings(settings, cwd=folder, instructions=system)
    prepared = expand_prompt(prompt, folder, attach=attach)
    return PreparedRequest(system_prompt=builder.build(tools), text=prepared.text, images=prepared.images,
                           attachments=prepared.attachments, builder=builder)


def images_replaced_note(model_ref: str, count: int) -> str:
    """The one line a person sees when images were replaced for a text-only model."""
    what = "1 image was" if count == 1 else f"{count} images were"
    return (f"{model_ref} cannot see images: {what} sent as a short note instead (the conversation keeps them); "
            "pick a model with image input to send them.")
