from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionEntry,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from treechat.widgets.transcript.items import TranscriptItem
from treechat.widgets.transcript.message_view import CompactionCard, MessageView, ThinkingBlock, ToolLine
from treechat.widgets.transcript.originals import OriginalLines
from treechat.widgets.transcript.view import MAX_MOUNTED, WINDOW, Transcript

from .helpers import Host, screen_text, wait_for


def assistant(text: str, **kw) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], model="m1", **kw)


def every_kind() -> list[TranscriptItem]:
    return [
        TranscriptItem("u1", UserMessage(content="hello *there*"), label="start"),
        TranscriptItem("a1", AssistantMessage(model="m1", content=[
            ThinkingContent(thinking="let me think"),
            TextContent(text="Here:\n\n```python\nprint('hi')\n```"),
            ToolCall(id="c1", name="bash", arguments={"command": "ls -la"}),
        ])),
        TranscriptItem("t1", ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="file1\nfile2\nfile3")])),
        TranscriptItem("t2", ToolResultMessage(tool_call_id="c2", tool_name="read", is_error=True, content=[TextContent(text="no such file")])),
        TranscriptItem("b1", BashExecutionMessage(command="git status", output="clean", exit_code=0)),
        TranscriptItem("c1", CustomMessage(custom_type="note", content="a custom note")),
        TranscriptItem("bs", BranchSummaryMessage(summary="We tried approach A.", from_id="x")),
        TranscriptItem("k1", CompactionEntry(id="k1", parent_id="a", summary="## Goal\nship it", tokens_before=143210, tokens_after=18450, trigger="auto")),
        TranscriptItem("e1", assistant("partial", stop_reason="error", error_message="HTTP 529 overloaded")),
        TranscriptItem("ab", assistant("half an answ", stop_reason="aborted")),
    ]


async def test_every_message_kind_renders():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(100, 60)) as pilot:
        await transcript.set_messages(every_kind())
        await pilot.pause()
        svg = screen_text(app)
        for needle in ["hello", "print", "thinking", "bash", "git", "custom", "branch", "compacted", "143,210", "18,450",
                       "HTTP", "529", "stopped", "start"]:
            assert needle in svg, needle
        assert len(transcript.query(MessageView)) == 10
        views = {v.entry_id: v for v in transcript.query(MessageView)}
        assert views["e1"].has_class("-error") and views["ab"].has_class("-aborted")


async def test_tool_lines_expand_on_click_and_ctrl_o():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(100, 40)) as pilot:
        await transcript.set_messages(every_kind()[:3])
        await pilot.pause()
        lines = list(transcript.query(ToolLine))
        assert len(lines) == 2 and not any(line.expanded for line in lines)
        result = lines[1]
        assert "file3" not in str(result.render())
        await pilot.click(result)
        assert result.expanded and "file3" in str(result.render())
        transcript.focus()
        await pilot.press("ctrl+o")
        assert all(line.expanded for line in transcript.query(ToolLine))
        await pilot.press("ctrl+o")
        assert not any(line.expanded for line in transcript.query(ToolLine))
        transcript.toggle_thinking(True)
        assert all(block.expanded for block in transcript.query(ThinkingBlock))


async def test_a_thinking_block_with_no_words_is_not_a_row():
    """The Responses API keeps its encrypted reasoning in a thinking block with no summary text:
    nothing to read, so no "thinking (0 chars)" row."""
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(100, 20)) as pilot:
        await transcript.set_messages([TranscriptItem("a1", AssistantMessage(model="m1", content=[
            ThinkingContent.model_validate({"thinking": "", "thinkingSignature": "opaque"}),
            TextContent(text="the answer")]))])
        await pilot.pause()
        assert not transcript.query(ThinkingBlock) and "the answer" in screen_text(app)


async def test_compaction_card_asks_for_originals_shows_a_row_each_and_opens_one():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(100, 40)) as pilot:
        await transcript.set_messages([every_kind()[7]])
        await pilot.pause()
        await pilot.click(CompactionCard)
        await pilot.pause()
        assert [m.entry_id for m in app.posted(Transcript.ExpandCompaction)] == ["k1"]
        await transcript.show_originals("k1", [("o1", UserMessage(content="old question")), ("o2", assistant("old answer"))])
        await pilot.pause()
        text = screen_text(app)
        assert "not in model context" in text and "▸ you · old question" in text and "▸ assistant · old answer" in text
        assert [v.entry_id for v in transcript.query(MessageView)] == ["k1"]  # rows, not views
        rows = transcript.query_one(OriginalLines)
        await pilot.click(rows, offset=(2, 1))  # the second row opens in full, dimmed
        await pilot.pause()
        inner = [v for v in transcript.query(MessageView) if v.entry_id == "o2"]
        assert inner and inner[0].has_class("-outside")
        assert "▾ assistant · old answer" in screen_text(app)
        assert transcript.selected == "o2"
        await pilot.click(transcript.query(OriginalLines)[0], offset=(2, 1))  # and closes again
        await pilot.pause()
        assert [v.entry_id for v in transcript.query(MessageView)] == ["k1"]
        assert not app.posted(CompactionCard.Expanded)[1:]  # clicks among the originals never fold the card


async def test_sibling_switcher_posts_requests():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 20)) as pilot:
        await transcript.set_messages([("u1", UserMessage(content="q")), ("a1", assistant("answer"))])
        transcript.set_siblings("u1", 2, 3)
        await pilot.pause()
        view = next(v for v in transcript.query(MessageView) if v.entry_id == "u1")
        header = view.header
        assert header is not None and "‹ 2/3 ›" in str(header.render())
        left, right = header._arrows
        await pilot.click(view.header, offset=(right, 0))
        await pilot.click(view.header, offset=(left, 0))
        transcript.focus()
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert [(m.entry_id, m.delta) for m in app.posted(Transcript.SiblingRequested)] == [("u1", 1), ("u1", -1), ("u1", 1)]


async def test_streaming_updates_then_settles():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages([("u1", UserMessage(content="q"))])
        await transcript.set_streaming(assistant(""))
        text = ""
        for i in range(200):
            text += f"tok{i} "
            transcript.update_streaming(assistant(text))
        await pilot.pause(0.2)
        await pilot.pause()
        assert transcript.streaming is not None
        assert "tok199" in transcript.streaming.written
        assert "tok199" in " ".join(transcript.streaming.body.text_lines)  # drawn, not only kept
        final = assistant(text + "\n\nthe end")
        await transcript.append_message(("a1", final))
        await transcript.set_streaming(None)
        await pilot.pause()
        assert transcript.streaming is None
        assert [v.entry_id for v in transcript.query(MessageView)] == ["u1", "a1"]
        assert "the end" in screen_text(app)


async def test_two_thousand_messages_mount_a_window_and_load_older_on_scroll():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        items = [(f"m{i}", UserMessage(content=f"message {i}") if i % 2 == 0 else assistant(f"reply {i}")) for i in range(2000)]
        await transcript.set_messages(items)
        await pilot.pause()
        views = list(transcript.query(MessageView))
        assert WINDOW <= len(views) <= MAX_MOUNTED and views[-1].entry_id == "m1999"
        start = transcript.start
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.pause()
        assert transcript.start < start  # reaching the top mounted older items above
        assert "message" in screen_text(app)
        await transcript.highlight("m5")
        await pilot.pause()
        marked = [v.entry_id for v in transcript.query(MessageView) if v.has_class("-highlight")]
        assert marked == ["m5"]


async def test_load_older_is_posted_at_the_very_top():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages([(f"m{i}", UserMessage(content="text")) for i in range(1, 21)])
        # opened at its end (laid out and scrolled there: under load, a frame or two after the mount),
        # and the window filled upwards to the first message: reaching the top while the first 4
        # are still being mounted above loads them (keeping the reader's place) instead of asking
        # for older ones — the test once raced that fill (2 of 8 loaded runs)
        assert await wait_for(pilot, lambda: len(transcript.query(MessageView)) == 20)
        await pilot.pause()
        assert await wait_for(pilot, lambda: transcript.max_scroll_y > 1 and transcript.scroll_y >= transcript.max_scroll_y - 1)
        transcript.scroll_home(animate=False, immediate=True)
        assert await wait_for(pilot, lambda: len(app.posted(Transcript.LoadOlder)) == 1)
        await transcript.prepend_messages([("m0", UserMessage(content="older"))])
        await pilot.pause()
        assert [v.entry_id for v in transcript.query(MessageView)][:2] == ["m0", "m1"]


async def test_the_end_stays_followed_while_older_messages_fill_in_above():
    """A long branch opens at its end with a window of short messages; older chunks mount above it,
    a frame apart, to fill the screen. Keeping the reader's place for them must not release the
    anchor: the next message has to appear at the bottom, not below the view."""
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages([(f"m{i}", UserMessage(content=f"line {i}")) for i in range(300)])
        assert await wait_for(pilot, lambda: transcript.start < len(transcript.items) - WINDOW)  # older chunks above
        await transcript.append_message(("new", assistant("the newest reply\n\nwith two paragraphs")))
        assert await wait_for(pilot, lambda: "the newest reply" in screen_text(app))
        assert transcript.following and transcript.scroll_y == transcript.max_scroll_y > 0
