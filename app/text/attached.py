"""How attached text files live inside a user message: each as a `<file path="…">` block after
what the person typed (images are image blocks; `treechat.text.images` reads their facts). The app
builds them (`treechat.prompts.attachments`); the transcript shows them as chips, not their whole text.
"""

from __future__ import annotations

import re


def file_block(shown: str, text: str) -> str:
    """How an attached text file appears in the message: its path, then its contents."""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f'<file path="{shown}">\n{body}</file>'


_BLOCK = re.compile(r'\n\n<file path="([^"\n]*)">\n(.*?)</file>(?=\n\n<file path=|\Z)', re.S)


def split_file_blocks(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the words the person typed, [(path, contents), …]) of a message built by expand_prompt,
    so the transcript can show attached files as chips instead of their whole text."""
    first = _BLOCK.search(text)
    if first is None:
        return text, []
    return text[:first.start()], [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text, first.start())]
