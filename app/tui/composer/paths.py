"""What the composer asks of the working folder: Tab inside an `@path` token completes it, and a
pasted path of an image becomes `@path` (treechat.prompts.attachments, loaded on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treechat.widgets.composer.view import Completion


def complete_path(text: str, cursor: int, cwd: str) -> Completion | None:
    from treechat.prompts.attachments import complete_at_path

    return complete_at_path(text, cursor, cwd)


def pasted_image(pasted: str, cwd: str) -> str | None:
    from treechat.prompts.attachments import pasted_image_token

    return pasted_image_token(pasted, cwd)
