"""The SSE decoder yields the same events for every chunking of the same bytes."""

from __future__ import annotations

import itertools

from treechat.llm.sse import SSEDecoder, SSEEvent

WIRE = (
    b": OPENROUTER PROCESSING\r\n\r\n"
    b"event: message_start\r\ndata: {\"a\": 1}\r\n\r\n"
    b"data: {\"t\": \"line\xe2\x80\xa8sep \xc2\x85 and \xe2\x80\xa9\"}\n\n"
    b"data: first\ndata: second\r\r"
    b"id: 7\ndata:no-space\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent("message_start", '{"a": 1}'),
    SSEEvent("message", '{"t": "line\u2028sep \u0085 and \u2029"}'),
    SSEEvent("message", "first\nsecond"),
    SSEEvent("message", "no-space", "7"),
    SSEEvent("message", "[DONE]", "7"),
]


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    for piece in pieces:
        out.extend(decoder.feed(piece))
    out.extend(decoder.close())
    return out


def test_whole_buffer() -> None:
    assert decode([WIRE]) == EXPECTED


def test_one_byte_at_a_time() -> None:
    assert decode([WIRE[i : i + 1] for i in range(len(WIRE))]) == EXPECTED


def test_every_two_way_split() -> None:
    # covers a CRLF split across chunks and splits inside multi-byte UTF-8
    for i in range(len(WIRE) + 1):
        assert decode([WIRE[:i], WIRE[i:]]) == EXPECTED, i


def test_every_three_way_split_near_tricky_bytes() -> None:
    marks = [i for i in range(len(WIRE)) if WIRE[i] in (0x0D, 0x0A) or WIRE[i] >= 0x80]
    cuts = sorted({c for m in marks for c in (m, m + 1)})
    for a, b in itertools.combinations(cuts, 2):
        assert decode([WIRE[:a], WIRE[a:b], WIRE[b:]]) == EXPECTED, (a, b)


def test_last_event_without_blank_line_is_flushed_at_eof() -> None:
    assert decode([b"data: tail"]) == [SSEEvent("message", "tail")]


def test_unicode_line_separators_do_not_split() -> None:
    events = decode(["data: a\u2028b\u2029c\u0085d\n\n".encode()])
    assert events == [SSEEvent("message", "a\u2028b\u2029c\u0085d")]


def test_cr_only_lines_and_a_cr_at_a_chunk_edge() -> None:
    wire = b"data: a\rdata: b\r\rdata: c\r"
    assert decode([wire[:8], wire[8:]]) == [SSEEvent("message", "a\nb")] + [SSEEvent("message", "c")]
    assert decode([b"data: x\r", b"\n", b"\ndata: y\n\n"]) == [SSEEvent("message", "x"), SSEEvent("message", "y")]


def test_a_multi_megabyte_event_in_small_chunks_decodes_in_linear_time() -> None:
    """Issue 15: re-joining the buffer per chunk made one 10 MB event take minutes. The bound
    below is not a benchmark (bench/sse.py is): a quadratic decoder needs hours for this."""
    import time

    payload = ("x" * 1023 + "\u2028") * 4096  # ~4 MB, with separators that must not split it
    wire = f"event: big\ndata: {payload}\n\n".encode()
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    deadline = time.monotonic() + 20
    for i in range(0, len(wire), 512):
        out.extend(decoder.feed(wire[i : i + 512]))
        assert time.monotonic() < deadline, f"decoding stalled at byte {i} of {len(wire)}"
    assert out == [SSEEvent("big", payload)] and decoder.close() == []
