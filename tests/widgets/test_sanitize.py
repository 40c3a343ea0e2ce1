import json

import pytest

from treechat.storage.base import TreeRow
from treechat.storage.model import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from treechat.text.sanitize import json_for_terminal, sanitize, sanitize_line, visible, visible_line
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .helpers import Host, screen_text, wait_for

EVIL = "ok\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07 \x1b[2Jcleared \x1b[31mred\x1b[0m \x9b6n \x1bPdcs\x1b\\ \x07bell\x00 \u202egnp.exe"


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("plain text\nwith\ttab", "plain text\nwith\ttab"),
        ("a\x1b]52;c;ZXZpbA==\x07b", "ab"),  # OSC 52 clipboard write, BEL-terminated
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8, ST-terminated
        ("x\x1b[2Jy", "xy"),
        ("\x1b[1;31mred\x1b[0m", "red"),
        ("8-bit\x9b2Jcsi", "8-bitcsi"),
        ("line\r\nnext\rover", "line\nnextover"),
        ("esc at end\x1b", "esc at end"),
        ("unterminated \x1b]0;title", "unterminated "),
        ("bidi \u202eevil\u202c", "bidi evil"),
        ("nul\x00 del\x7f c1\x85", "nul del c1"),
    ],
)
def test_sanitize(raw, clean):
    assert sanitize(raw) == clean


def test_sanitize_is_total():
    assert sanitize(None) == "" and sanitize(42) == "42"
    assert sanitize_line("a\n\n b\tc", 4) == "a b…"
    for ch in map(chr, range(0x00, 0xA0)):
        out = sanitize(f"x{ch}y")
        assert all(c in "\n\t" or 0x20 <= ord(c) < 0x7F for c in out), repr(ch)


async def test_escape_sequences_never_reach_the_screen():
    transcript, tree = Transcript(), TreeView()
    app = Host(transcript, tree)
    async with app.run(size=(100, 40)) as pilot:
        await transcript.set_messages([
            ("u1", UserMessage(content=EVIL)),
            ("a1", AssistantMessage(content=[TextContent(text=f"# Title\n\n{EVIL}\n\n```\n{EVIL}\n```")])),
            ("t1", ToolResultMessage(tool_call_id="c", tool_name="bash\x1b[2J", content=[TextContent(text=EVIL)])),
        ])
        transcript.toggle_tools(True)
        await transcript.set_streaming(AssistantMessage(content=[TextContent(text=EVIL)]))
        tree.set_rows([TreeRow("u1", None, "message", "user", EVIL, "", label="l\x1b[2J")], "u1", {"u1"})
        assert await wait_for(pilot, lambda: transcript.streaming is not None and "red" in transcript.streaming.written)
        await pilot.pause()
        text = screen_text(app)
        assert "cleared" in text and "red" in text
        assert not any(c in text for c in "\x1b\x9b\x07\x00\u202e")
        assert "\x1b" not in app.export_screenshot()


# ---------------------------------------------------------------- visible mode (stdout, stderr, files)

# What a terminal acts on: C0 but \t \n, DEL, C1, bidi embeddings/overrides/isolates.
TERMINAL_ACTS_ON = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0),
                                 *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("plain text\nwith\ttab", "plain text\nwith\ttab"),
        ("a\x1b]52;c;ZXZpbA==\x07b", "a␛]52;c;ZXZpbA==␇b"),  # OSC 52 clipboard write
        ("\x1b]0;pwned\x07title", "␛]0;pwned␇title"),  # OSC 0 window title
        ("x\x1b[2Jy", "x␛[2Jy"),
        ("8-bit\x9b2Jcsi", "8-bit<U+009B>2Jcsi"),
        ("osc8 \x1b]8;;http://x\x1b\\link", "osc8 ␛]8;;http://x␛\\link"),
        ("bell\x07", "bell␇"),
        ("bidi \u202eexe.txt\u202c \u2066iso\u2069", "bidi <U+202E>exe.txt<U+202C> <U+2066>iso<U+2069>"),
        ("nul\x00 bs\x08 del\x7f nel\x85", "nul␀ bs␈ del␡ nel<U+0085>"),
        ("crlf\r\nnext\rhidden", "crlf\nnext\nhidden"),  # a lone CR must not rewrite the line
        ("lone surrogate \ud83d", "lone surrogate <U+D83D>"),
        ("a pair in halves \ud83d\ude00", "a pair in halves 😀"),  # JSON "\ud83d\ude00" split across chunks
        ("emoji 😀 and 漢字 stay", "emoji 😀 and 漢字 stay"),
    ],
)
def test_visible_shows_controls_as_placeholders(raw, shown):
    assert visible(raw) == shown


def test_visible_is_total_and_never_lets_a_control_through():
    assert visible(None) == "" and visible(42) == "42"
    for ch in TERMINAL_ACTS_ON | {chr(0xD800), chr(0xDFFF)}:
        out = visible(f"x{ch}y")
        assert not (set(out) & TERMINAL_ACTS_ON), repr(ch)
        assert len(out) > 2, repr(ch)  # something visible stands where the control was
        out.encode("utf-8")  # writable to a UTF-8 stream


def test_visible_line_is_one_line():
    assert visible_line("a\n\n b\x1b[2J\tc") == "a b␛[2J c"
    assert visible_line("abcdef", 4) == "abc…"
    assert "\n" not in visible_line("x\r\ny\rz\x0bw\x85v")


@pytest.mark.parametrize("value", [EVIL, {"name": "s\x9b2J\u202e", "list": ["\x7f", "\ud800"]}, "plain"])
def test_json_for_terminal_keeps_the_value_and_escapes_controls(value):
    text = json.dumps(value, ensure_ascii=False, indent=2)
    safe = json_for_terminal(text)
    assert json.loads(safe) == json.loads(text)
    assert not (set(safe) & TERMINAL_ACTS_ON)
    safe.encode("utf-8")


def test_sanitize_joins_a_split_surrogate_pair_and_replaces_half_a_pair() -> None:
    out = sanitize("smile \ud83d\ude00 half \udc00 \x1b[2Jend")
    assert out == "smile \U0001f600 half \ufffd end"
    out.encode("utf-8")  # what the terminal's output stream does with it
