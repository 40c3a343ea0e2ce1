"""What a model writes depends on where it came from (storage/model.py's contract):

- built in Python (a constructor, `model_validate` of a dict, `model_construct`): every field that
  has a value, defaults included, in nested models made from dicts too;
- read from disk (`parse_entry`, `parse_entries_json`, `parse_message`): exactly the keys it was
  read with, also when such an object is later put inside one built in Python.

The expected dumps are literal (recorded before the marking moved out of `model_post_init`), key
order included: a stored payload is the dump's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import pytest
from pydantic import BaseModel

from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    CustomMessage,
    CustomMessageEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    Usage,
    UserMessage,
    dump,
    parse_entries_json,
    parse_entry,
    parse_message,
)
from treechat.storage.well_formed import well_formed

COST = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}
USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": COST}
# An assistant message's defaults after its content, as a Python-built one writes them
FILLED = {"api": "", "provider": "", "model": "", "usage": USAGE, "stopReason": "stop"}


M = TypeVar("M", bound=BaseModel)


def built(cls: type[M], **fields: object) -> M:
    """cls(**fields) with dicts where models are typed: what these tests are about."""
    return cls(**fields)


def _wire_message() -> AssistantMessage:
    message = parse_message({"role": "assistant", "content": [{"type": "text", "text": "w"}], "timestamp": 5})
    assert isinstance(message, AssistantMessage)
    return message


def _assigned() -> BaseModel:
    message = parse_message({"role": "custom", "customType": "k", "content": "x", "timestamp": 1})
    assert isinstance(message, CustomMessage)
    message.details = {"a": 1}
    return message


def _surrogate() -> BaseModel:
    # half an emoji from a stream: the repaired copy is validated from a dict, so it is "built"
    return well_formed(parse_entry({"type": "message", "id": "s", "parentId": None, "timestamp": "t", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "a\ud83d"}], "timestamp": 1}}))


CASES: list[tuple[str, Callable[[], BaseModel], dict[str, object]]] = [
    ("user_str", lambda: UserMessage(content="hi", timestamp=1),
     {"role": "user", "content": "hi", "timestamp": 1}),
    ("assistant_blocks_from_dicts", lambda: built(AssistantMessage,
        content=[{"type": "text", "text": "a"}, {"type": "toolCall", "id": "c1", "name": "read"},
                 {"type": "future", "x": 1}], timestamp=2),
     {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                       {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}},
                                       {"type": "future", "x": 1}], **FILLED, "timestamp": 2}),
    ("assistant_defaults", lambda: AssistantMessage(timestamp=3),
     {"role": "assistant", "content": [], **FILLED, "timestamp": 3}),
    ("entry_message_from_dict", lambda: built(MessageEntry,
        id="e1", parent_id=None, timestamp="2026-01-01T00:00:00.000Z",
        message={"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}], "timestamp": 4}),
     {"id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z", "type": "message", "message": {
         "role": "assistant", "content": [{"type": "thinking", "thinking": "t"}], **FILLED, "timestamp": 4}}),
    ("entry_wire_message", lambda: MessageEntry(id="e2", parent_id="e1", timestamp="t", message=_wire_message()),
     {"id": "e2", "parentId": "e1", "timestamp": "t", "type": "message",
      "message": {"role": "assistant", "content": [{"type": "text", "text": "w"}], "timestamp": 5}}),
    ("mixed_wire_and_dict_blocks", lambda: built(AssistantMessage,
        content=[_wire_message().content[0], {"type": "image", "data": "AA", "mimeType": "image/png"}], timestamp=6),
     {"role": "assistant", "content": [{"type": "text", "text": "w"},
                                       {"type": "image", "data": "AA", "mimeType": "image/png"}],
      **FILLED, "timestamp": 6}),
    ("tool_result_from_dict_blocks", lambda: built(ToolResultMessage,
        tool_call_id="c1", tool_name="bash", content=[{"type": "text", "text": "out"}], timestamp=7),
     {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [{"type": "text", "text": "out"}],
      "isError": False, "timestamp": 7}),
    ("validate_thinking", lambda: ThinkingContent.model_validate(
        {"thinking": "[Reasoning redacted]", "thinkingSignature": "S", "redacted": True}),
     {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "S", "redacted": True}),
    ("validate_entry_like_session", lambda: MessageEntry.model_validate(
        {"id": "e3", "parent_id": "e2", "timestamp": "t", "message": UserMessage(content="u", timestamp=8)}),
     {"id": "e3", "parentId": "e2", "timestamp": "t", "type": "message",
      "message": {"role": "user", "content": "u", "timestamp": 8}}),
    ("validate_entry_wire_message", lambda: MessageEntry.model_validate(
        {"id": "e5", "parent_id": None, "timestamp": "t", "message": _wire_message()}),
     {"id": "e5", "parentId": None, "timestamp": "t", "type": "message",
      "message": {"role": "assistant", "content": [{"type": "text", "text": "w"}], "timestamp": 5}}),
    ("validate_entry_nested_dict", lambda: MessageEntry.model_validate(
        {"id": "e4", "parent_id": None, "timestamp": "t",
         "message": {"role": "user", "content": [{"type": "text", "text": "b"}], "timestamp": 9}}),
     {"id": "e4", "parentId": None, "timestamp": "t", "type": "message",
      "message": {"role": "user", "content": [{"type": "text", "text": "b"}], "timestamp": 9}}),
    ("validate_assistant_nested_dict", lambda: MessageEntry.model_validate(
        {"id": "e6", "parent_id": None, "timestamp": "t", "message": {"role": "assistant", "timestamp": 9}}),
     {"id": "e6", "parentId": None, "timestamp": "t", "type": "message",
      "message": {"role": "assistant", "content": [], **FILLED, "timestamp": 9}}),
    ("validate_compaction", lambda: CompactionEntry.model_validate(
        {"id": "c", "parent_id": "a", "timestamp": "t", "summary": "s"}),
     {"id": "c", "parentId": "a", "timestamp": "t", "type": "compaction", "summary": "s", "tokensBefore": 0}),
    ("validate_unknown_block", lambda: UserMessage.model_validate(
        {"content": [{"type": "text", "text": "block"}, {"type": "future", "x": 1}], "timestamp": 10}),
     {"role": "user", "content": [{"type": "text", "text": "block"}, {"type": "future", "x": 1}], "timestamp": 10}),
    ("leaf_none_target", lambda: LeafEntry(id="l", parent_id=None, target_id=None, timestamp="t"),
     {"id": "l", "parentId": None, "timestamp": "t", "type": "leaf", "targetId": None}),
    ("label", lambda: LabelEntry(id="l2", parent_id="e1", target_id="e1", timestamp="t"),
     {"id": "l2", "parentId": "e1", "timestamp": "t", "type": "label", "targetId": "e1"}),
    ("custom_message_entry", lambda: built(CustomMessageEntry,
        id="cm", parent_id=None, timestamp="t", custom_type="k", content=[{"type": "text", "text": "x"}]),
     {"id": "cm", "parentId": None, "timestamp": "t", "type": "custom_message", "customType": "k",
      "content": [{"type": "text", "text": "x"}], "display": True}),
    ("construct_text", lambda: TextContent.model_construct(text="x"), {"type": "text", "text": "x"}),
    ("usage_default", lambda: Usage(), USAGE),
    ("usage_from_dict_cost", lambda: built(Usage, input=1, cost={"total": 0.5}),
     {**USAGE, "input": 1, "cost": {**COST, "total": 0.5}}),
    ("wire_entry", lambda: parse_entry(
        '{"type":"message","id":"w","parentId":null,"timestamp":"t","message":{"role":"assistant",'
        '"content":[{"type":"toolCall","id":"c","name":"n"}],"timestamp":1}}'),
     {"id": "w", "parentId": None, "timestamp": "t", "type": "message",
      "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "n"}], "timestamp": 1}}),
    ("wire_entries", lambda: parse_entries_json(
        '[{"type":"compaction","id":"c","parentId":null,"timestamp":"t","summary":"s"}]')[0],
     {"id": "c", "parentId": None, "timestamp": "t", "type": "compaction", "summary": "s"}),
    ("wire_then_assigned", _assigned,
     {"role": "custom", "customType": "k", "content": "x", "details": {"a": 1}, "timestamp": 1}),
    ("well_formed_repair", _surrogate,
     {"id": "s", "parentId": None, "timestamp": "t", "type": "message", "message": {
         "role": "assistant", "content": [{"type": "text", "text": "a\ufffd"}], **FILLED, "timestamp": 1}}),
    ("copy_of_wire", lambda: _wire_message().model_copy(update={"model": "m"}),
     {"role": "assistant", "content": [{"type": "text", "text": "w"}], "model": "m", "timestamp": 5}),
]


@pytest.mark.parametrize(("build", "expected"), [(b, e) for _, b, e in CASES], ids=[n for n, _, _ in CASES])
def test_dump_is_what_it_was(build: Callable[[], BaseModel], expected: dict[str, object]) -> None:
    # json.dumps compares the key order as well: it is the order of the stored payload
    assert json.dumps(dump(build())) == json.dumps(expected)


def test_defaults_built_in_python_include_the_timestamps() -> None:
    entry = built(MessageEntry, id="e", parent_id=None, message={"role": "user", "content": "x"})
    got = dump(entry)
    assert isinstance(got["timestamp"], str) and got["timestamp"].endswith("Z")
    message = got["message"]
    assert isinstance(message, dict) and list(message) == ["role", "content", "timestamp"]
    assert isinstance(message["timestamp"], int)


def test_a_wire_object_inside_a_built_one_is_not_marked() -> None:
    wire = _wire_message()
    MessageEntry(id="e", parent_id=None, timestamp="t", message=wire)
    AssistantMessage(content=[wire.content[0]], timestamp=1)
    assert dump(wire) == {"role": "assistant", "content": [{"type": "text", "text": "w"}], "timestamp": 5}
