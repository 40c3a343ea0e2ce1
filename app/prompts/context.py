"""What a front end says about a prompt on its way out: the note when a text-only model gets
its images as a short placeholder (the system prompt and `@path` attachments are built by
app/session/system_prompt.py and app/prompts/attachments.py)."""

from __future__ import annotations


def images_replaced_note(model_ref: str, count: int) -> str:
    """The one line a person sees when images were replaced for a text-only model."""
    what = "1 image was" if count == 1 else f"{count} images were"
    return (f"{model_ref} cannot see images: {what} sent as a short note instead (the conversation keeps them); "
            "pick a model with image input to send them.")
