import pytest

from treechat.storage.base import TreeRow
from treechat.storage.model import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from treechat.widgets.sanitize import sanitize, sanitize_line
from treechat.widgets.transcript import Transcript
from treechat.widgets.tree_view import TreeView

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
