"""Pi's framing (docs/rpc.md): LF is the only record delimiter, a CR before it is dropped, and
U+2028/U+2029 inside a JSON string are characters, not line ends; a line is bounded in bytes."""

from __future__ import annotations

import json

from treechat.agent.types import Json
from treechat.protocols.framing import Framer, Overlong, json_line


def test_lines_end_at_lf_only() -> None:
    framer = Framer()
    text = '{"type":"prompt","message":"a\u2028b\u2029c\\u2028"}'.encode()
    assert framer.feed(text + b"\r\n" + b'{"x":1}\n') == [text, b'{"x":1}']
    assert json.loads(text)["message"] == "a\u2028b\u2029c\u2028"


def test_a_line_split_over_reads_is_one_line() -> None:
    framer = Framer()
    assert framer.feed(b'{"a":') == [] and framer.feed(b'"\xe2\x80') == []
    assert framer.feed(b'\xa8"}\n{"b"') == ['{"a":"\u2028"}'.encode()]
    assert framer.end() == [b'{"b"']  # the last line needs no LF
    assert framer.end() == []


def test_an_overlong_line_is_skipped_and_the_next_read() -> None:
    framer = Framer(limit=10)
    got = framer.feed(b"x" * 8) + framer.feed(b"y" * 8) + framer.feed(b"z" * 100) + framer.feed(b"\nok\n")
    assert got == [Overlong(116), b"ok"]


def test_the_limit_counts_bytes_not_characters() -> None:
    framer = Framer(limit=4)
    assert framer.feed(b"ab\n") == [b"ab"]
    assert framer.feed("éé\n".encode()) == ["éé".encode()]
    assert framer.feed("ééé\n".encode()) == [Overlong(6)]


def test_written_lines_escape_what_would_end_or_drive_a_line() -> None:
    value: dict[str, Json] = {"text": "a\u2028b\u2029c\x1b]52;c;x\x07\x9b\u202e\ud800 é\n"}
    line = json_line(value)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b"\xe2\x80\xa8" not in line and b"\xe2\x80\xa9" not in line and b"\x1b" not in line
    assert "é" in line.decode("utf-8")  # ordinary text stays as it is
    assert json.loads(line) == value  # the same value


def test_an_update_carries_its_message_twice_whole() -> None:
    first: dict[str, Json] = {"role": "assistant", "content": [{"type": "text", "text": 'say "hi"\u2028\x9b'}]}
    second: dict[str, Json] = {"role": "assistant", "content": [{"type": "text", "text": "other"}]}
    for message in (first, first, second, first):
        record: dict[str, Json] = {"type": "message_update", "message": message,
                                   "assistantMessageEvent": {"type": "text_delta", "delta": "hi", "partial": message}}
        line = json_line(record)
        assert json.loads(line) == record and line.count(b"\n") == 1 and b"\xee\x80\x80" not in line
