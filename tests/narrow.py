"""Narrowing for tests: a value asserted to be of one type, so the type checker follows what the
test already knows (an entry is a message entry, a message an assistant reply, a block text)."""

from __future__ import annotations

from typing import Any, TypeVar

from treechat.storage.model import AssistantMessage, MessageEntry, TextContent

T = TypeVar("T")


def of(kind: type[T], value: object) -> T:
    """`value`, asserted to be a `kind`."""
    assert isinstance(value, kind), f"expected {kind.__name__}, got {value!r}"[:500]
    return value


def assistant_of(value: object) -> AssistantMessage:
    """An assistant message, or the `message` of a message entry holding one."""
    if isinstance(value, MessageEntry):
        value = value.message
    return of(AssistantMessage, value)


def first_text(message: Any) -> str:
    """The text of a message's first content block (asserted to be text)."""
    return of(TextContent, message.content[0]).text
