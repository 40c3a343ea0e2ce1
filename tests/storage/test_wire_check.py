"""The import's fast path (storage/imports/wire_check.py) may only ever say "valid" for what pydantic accepts.

Its structs mirror model.py: the same fields under the same JSON names (so a field added to one
and not the other fails here), and every line that is a little wrong — each field given a value
of every other JSON kind, a key written by its Python name, a tag nobody knows, nesting deeper
than pydantic reads — is either refused by the fast path or accepted by pydantic too. The real
Pi files and the bench's generated shape are proven valid (the fast path is the path taken)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import msgspec
import pytest
from pydantic import BaseModel

from treechat.storage import model
from treechat.storage.base import ImportReport
from treechat.storage.imports import wire_check
from treechat.storage.imports.stream_scan import validated

PI = Path(__file__).resolve().parents[1] / "fixtures" / "pi"

# Keys Pi writes that model.py keeps as extras; the fast path declares them as anything.
EXTRAS = {"textSignature", "thinkingSignature", "redacted", "thoughtSignature", "partialJson", "responseModel",
          "responseId", "diagnostics"}


def _tag(cls: type[BaseModel]) -> str | None:
    for name in ("type", "role"):
        field = cls.model_fields.get(name)
        if field is not None and isinstance(field.default, str):
            return field.default
    return None


PAIRS: list[tuple[type[BaseModel], type[msgspec.Struct]]] = [
    *zip((c for c in model.KnownEntry.__args__), wire_check.ENTRY_STRUCTS, strict=True),
    (model.UserMessage, wire_check.UserMessage), (model.AssistantMessage, wire_check.AssistantMessage),
    (model.ToolResultMessage, wire_check.ToolResultMessage),
    (model.BashExecutionMessage, wire_check.BashExecutionMessage), (model.CustomMessage, wire_check.CustomMessage),
    (model.BranchSummaryMessage, wire_check.BranchSummaryMessage),
    (model.CompactionSummaryMessage, wire_check.CompactionSummaryMessage),
    (model.TextContent, wire_check.TextBlock), (model.ThinkingContent, wire_check.ThinkingBlock),
    (model.ImageContent, wire_check.ImageBlock), (model.ToolCall, wire_check.ToolCallBlock),
    (model.Usage, wire_check.Usage), (model.Cost, wire_check.Cost),
]


@pytest.mark.parametrize(("pyd", "strict"), PAIRS, ids=lambda c: c.__name__)
def test_every_field_of_the_model_is_checked_under_its_json_name(pyd: type[BaseModel], strict: type[msgspec.Struct]) -> None:
    import msgspec

    info = msgspec.structs.fields(strict)
    names = {f.encode_name for f in info}
    tag_field = strict.__struct_config__.tag_field
    aliases = {f.alias or n for n, f in pyd.model_fields.items()} - {tag_field}
    assert names - EXTRAS == aliases
    if tag_field is not None:
        assert strict.__struct_config__.tag == _tag(pyd)
    python_names = {n for c, _ in PAIRS for n in c.model_fields}
    assert not (names & EXTRAS) & python_names  # an extra must never be a field's Python name


def _lines() -> list[bytes]:
    out = []
    for f in sorted(PI.glob("*.v3.jsonl")):
        for line in f.read_bytes().splitlines()[1:]:
            if line.strip():
                out.append(line)
    return out


def _pydantic_accepts(line: bytes) -> bool:
    try:
        model.parse_entry(line)
    except (ValueError, RecursionError):
        return False
    return True


def test_real_pi_files_are_proven_valid() -> None:
    lines = _lines()
    assert len(lines) > 1000
    assert wire_check.proven_valid(lines)


def _values() -> list[object]:
    return [None, True, 0, 5, -1, 1.5, 5.0, 10**30, "", "5", "x", "true", [], [1], {}, {"a": 1}]


def _mutations(obj: object) -> list[object]:
    """Every variant of `obj` with one value replaced by a value of another kind, one key removed,
    or one camelCase key written snake_case."""
    out: list[object] = []
    if isinstance(obj, dict):
        for key in list(obj):
            for value in _values():
                changed = dict(obj)
                changed[key] = value
                out.append(changed)
            removed = {k: v for k, v in obj.items() if k != key}
            out.append(removed)
            snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
            if snake != key:
                out.append({**removed, snake: obj[key]})
                out.append({**removed, snake: 12345})
                out.append({**obj, snake: 12345})
            for inner in _mutations(obj[key]):
                out.append({**obj, key: inner})
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            for inner in _mutations(item):
                out.append([*obj[:i], inner, *obj[i + 1 :]])
    return out


def _samples() -> list[dict[str, object]]:
    """One entry of every kind, with each optional field given (so each can be made wrong)."""
    usage = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
             "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}}
    base = {"id": "e1", "parentId": "p", "timestamp": "2026-01-01T00:00:00.000Z"}
    blocks = [{"type": "text", "text": "t", "textSignature": "s"},
              {"type": "thinking", "thinking": "h", "thinkingSignature": "s", "redacted": False},
              {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"a": 1}}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AA", "mimeType": "image/png"}],
         "timestamp": 1},
        {"role": "user", "content": "hi", "timestamp": 1.5},
        {"role": "assistant", "content": blocks, "api": "a", "provider": "p", "model": "m", "usage": usage,
         "stopReason": "toolUse", "errorMessage": "e", "timestamp": 1, "responseId": "r"},
        {"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": [{"type": "text", "text": "o"}],
         "details": {"x": [1]}, "isError": False, "timestamp": 1},
        {"role": "bashExecution", "command": "ls", "output": "o", "exitCode": 0, "cancelled": False, "truncated": False,
         "fullOutputPath": "/tmp/x", "excludeFromContext": True, "timestamp": 1},
        {"role": "custom", "customType": "c", "content": "x", "display": True, "details": None, "timestamp": 1},
        {"role": "branchSummary", "summary": "s", "fromId": "f", "timestamp": 1},
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 5, "timestamp": 1},
    ]
    entries: list[dict[str, object]] = [{**base, "type": "message", "message": m} for m in messages]
    entries += [
        {**base, "type": "thinking_level_change", "thinkingLevel": "high"},
        {**base, "type": "model_change", "provider": "p", "modelId": "m"},
        {**base, "type": "active_tools_change", "activeToolNames": ["read"]},
        {**base, "type": "compaction", "summary": "s", "firstKeptEntryId": "k", "tokensBefore": 5, "tokensAfter": 1,
         "retainedTail": True, "trigger": "manual", "details": {}, "fromHook": False},
        {**base, "type": "branch_summary", "fromId": "f", "summary": "s", "details": [], "fromHook": True},
        {**base, "type": "custom", "customType": "c", "data": {"a": [1, {"b": None}]}},
        {**base, "type": "custom_message", "customType": "c", "content": [{"type": "text", "text": "t"}],
         "display": False, "details": 1},
        {**base, "type": "label", "targetId": "t", "label": "l"},
        {**base, "type": "session_info", "name": "n"},
        {**base, "type": "leaf", "targetId": "t"},
    ]
    return entries


def test_the_samples_cover_every_kind_and_are_proven_valid() -> None:
    samples = _samples()
    assert {s["type"] for s in samples} == set(model.ENTRY_TYPES)
    for s in samples:
        line = json.dumps(s).encode()
        assert _pydantic_accepts(line)
        assert wire_check.proven_valid([line]), s


def test_nothing_pydantic_refuses_is_proven_valid() -> None:
    tried = refused = 0
    for sample in _samples():
        for variant in _mutations(copy.deepcopy(sample)):
            line = json.dumps(variant).encode()
            tried += 1
            if not _pydantic_accepts(line):
                refused += 1
                assert not wire_check.proven_valid([line]), line
    assert tried > 2000 and refused > 500  # the mutations reach the checks that matter


@pytest.mark.parametrize("depth", [150, 198, 199, 200, 260])
def test_deep_lines_are_left_to_pydantic(depth: int) -> None:
    data: object = 1
    for _ in range(depth):
        data = [data]
    line = json.dumps({"type": "custom", "id": "a", "parentId": None, "customType": "x", "data": data}).encode()
    assert wire_check.deep(line)
    report = ImportReport()
    kept = validated([(1, line), (2, json.dumps(_samples()[0]).encode())], report)
    assert len(kept) == (2 if _pydantic_accepts(line) else 1)
    assert report.skipped_lines == (0 if _pydantic_accepts(line) else 1)


def test_a_batch_with_one_bad_line_still_skips_just_that_line() -> None:
    good = [json.dumps({**s, "id": f"e{i}"}).encode() for i, s in enumerate(_samples())]
    bad = json.dumps({"type": "label", "id": "bad", "parentId": None, "targetId": 5}).encode()
    report = ImportReport()
    kept = validated([(i, line) for i, line in enumerate([*good[:3], bad, *good[3:]])], report)
    assert [line for line, _ in kept] == good
    assert report.skipped_lines == 1 and "line 3" in report.problems[0]
