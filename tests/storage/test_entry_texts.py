"""An import reads each entry's text once for both its tree preview and its search text
(`aggregates.view_texts`, `rows.view_row_and_text`): the values must be the ones the separate
functions give, for every kind of entry in real Pi sessions and the unusual ones."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from treechat.storage import aggregates
from treechat.storage.sql import rows
from treechat.storage.views import DecodeErrors, EntryView, decode_view

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"

UNUSUAL = [
    {"type": "message", "id": "a1", "parentId": None, "timestamp": "t", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "read", "arguments": {"p": 1}},
                                         {"type": "thinking", "thinking": "hmm"}], "stopReason": "toolUse"}},
    {"type": "message", "id": "a2", "parentId": None, "timestamp": "t", "message": {
        "role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom\nsecond"}},
    {"type": "message", "id": "u1", "parentId": None, "timestamp": "t", "message": {
        "role": "user", "content": "\n\n   \u2028  first real line  \r\nsecond" + "\nmore" * 1000}},
    {"type": "message", "id": "t1", "parentId": None, "timestamp": "t", "message": {
        "role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "  out\nput"}]}},
    {"type": "message", "id": "b1", "parentId": None, "timestamp": "t", "message": {
        "role": "bashExecution", "command": "ls", "output": "a\nb"}},
    {"type": "message", "id": "x1", "parentId": None, "timestamp": "t", "message": {"role": "someday", "content": "?"}},
    {"type": "message", "id": "n1", "parentId": None, "timestamp": "t", "message": {"role": "user"}},
    {"type": "compaction", "id": "c1", "parentId": None, "timestamp": "t", "summary": "so far", "firstKeptEntryId": "u1"},
    {"type": "custom_message", "id": "cm", "parentId": None, "timestamp": "t", "content": [{"type": "text", "text": "x"}]},
    {"type": "label", "id": "l1", "parentId": None, "timestamp": "t", "targetId": "u1", "label": ""},
    {"type": "leaf", "id": "lf", "parentId": None, "timestamp": "t", "targetId": "u1"},
    {"type": "model_change", "id": "mc", "parentId": None, "timestamp": "t", "provider": "p", "modelId": "m"},
]


def views() -> list[EntryView]:
    out = [decode_view(json.dumps(e)) for e in UNUSUAL]
    for file in sorted(FIXTURES.glob("*.jsonl")):
        for line in file.read_text().splitlines():
            if line.strip() and json.loads(line).get("type") != "session":
                try:
                    out.append(decode_view(line))
                except DecodeErrors:  # a v1 entry (no id): migrated before it is ever viewed
                    pass
    return out


def test_an_entry_read_once_gives_what_the_separate_functions_give():
    seen = views()
    assert len(seen) > 1000 and len({v.type for v in seen}) >= 8
    for view in seen:
        assert aggregates.view_texts(view) == (aggregates.view_preview(view), aggregates.view_text(view)), view.id
        row, text = rows.view_row_and_text(7, "s", view, "{}")
        assert row == rows.view_row(7, "s", view, "{}"), view.id
        assert text == ("" if view.type == "leaf" else rows.view_search_text(view)), view.id


def _first_line_by_splitting(text: str) -> str:
    """What a preview's first line was before it stopped splitting the whole text."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[: aggregates.PREVIEW_CHARS]
    return ""


def test_the_first_line_is_the_one_splitting_every_line_finds():
    # every line boundary str.splitlines knows, whitespace that is no boundary, long lines
    pieces = ["", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85",
              "\u2028", "\u2029", "\u00a0", "\u3000", "a", "é", "b c", "x" * 130, " " * 130, "y" * 119 + " z"]
    cases = ["".join(p) for n in (1, 2, 3) for p in itertools.product(pieces, repeat=n)]
    assert len(cases) > 10_000
    for text in cases:  # short texts are split; long ones (a long head of blanks) searched
        for t in (text, " " * 2048 + text, "\n" * 2048 + text, text + "\n" + "w" * 2048):
            assert aggregates._first_line(t) == _first_line_by_splitting(t), repr(t)
