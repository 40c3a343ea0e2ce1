"""The transcript's selection and the actions on it (issue 10 §4, §5), Home/End on long branches and
large expanded compaction cards (issue 11 §7)."""

from __future__ import annotations

from treechat.storage.model import (
    AssistantMessage,
    CompactionEntry,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from treechat.widgets.transcript.markdown_body import MarkdownBody
from treechat.widgets.transcript.message_view import CompactionCard, MessageView
from treechat.widgets.transcript.originals import OriginalLines
from treechat.widgets.transcript.view import MAX_MOUNTED, WINDOW, Transcript

from .helpers import Host, screen_text, wait_for


def reply(text: str, thinking: str | None = None) -> AssistantMessage:
    blocks: list = [ThinkingContent(thinking=thinking)] if thinking else []
    return AssistantMessage(content=[*blocks, TextContent(text=text)], model="m1")


CODE_REPLY = "Two ways:\n\n```python\nprint('one')\n```\n\nor\n\n```bash\necho two\n```\n\nDone."


def conversation() -> list:
    return [
        ("u1", UserMessage(content="first question")),
        ("a1", reply(CODE_REPLY, thinking="secret reasoning")),
        ("t1", ToolResultMessage(tool_call_id="c", tool_name="bash", content=[TextContent(text="line 1\nline 2")])),
        ("u2", UserMessage(content="second question")),
        ("a2", reply("plain answer")),
    ]


def long_branch(n: int) -> list:
    return [(f"m{i}", UserMessage(content=f"message {i}") if i % 2 == 0 else reply(f"reply {i}\n\nmore text")) for i in range(n)]


def selected_views(transcript: Transcript) -> list[str]:
    return [v.entry_id for v in transcript.query(MessageView) if v.has_class("-selected")]


async def test_arrows_move_a_visible_selection_and_escape_leaves_it():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 40)) as pilot:
        await transcript.set_messages(conversation())
        await pilot.pause()
        transcript.focus()
        await pilot.press("up")  # nothing selected: the lowest message on screen
        await wait_for(pilot, lambda: transcript.selected == "a2")
        assert selected_views(transcript) == ["a2"]
        await pilot.press("up", "up", "up")
        await wait_for(pilot, lambda: transcript.selected == "a1")
        assert selected_views(transcript) == ["a1"]
        await pilot.press("down")
        await wait_for(pilot, lambda: transcript.selected == "t1")
        await pilot.press("escape")
        assert transcript.selected is None and selected_views(transcript) == []


async def test_letter_keys_act_only_on_a_selected_message():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 40)) as pilot:
        await transcript.set_messages(conversation())
        await pilot.pause()
        transcript.focus()
        for key in ("y", "e", "r", "f", "L", "c"):
            assert transcript.check_action({"y": "copy", "e": "edit", "r": "retry", "f": "fork", "L": "label",
                                            "c": "copy_code"}[key], ()) is False
            await pilot.press(key)
        assert not [m for m in app.seen if isinstance(m, (Transcript.CopyRequested, Transcript.EntryRequest))]
        assert transcript.check_action("unselect", ()) is False  # Esc goes on to the App (stop)


async def test_actions_on_a_selected_user_message_and_reply():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 50)) as pilot:
        await transcript.set_messages(conversation())
        await pilot.pause()
        transcript.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: transcript.selected == "u1")
        await pilot.press("y", "e", "r", "f", "L")  # r is not for a prompt: nothing
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [("first question", "your message")]
        assert [m.entry_id for m in app.posted(Transcript.EditRequested)] == ["u1"]
        assert app.posted(Transcript.RetryRequested) == []
        assert [m.entry_id for m in app.posted(Transcript.ForkRequested)] == ["u1"]
        assert [m.entry_id for m in app.posted(Transcript.LabelRequested)] == ["u1"]
        app.seen.clear()
        await pilot.press("down", "y", "r", "e")  # e is not for a reply: nothing
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [(CODE_REPLY, "the reply")]
        assert [m.entry_id for m in app.posted(Transcript.RetryRequested)] == ["a1"]
        assert app.posted(Transcript.EditRequested) == []
        app.seen.clear()
        await pilot.press("down", "y")  # a tool result: its output
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [("line 1\nline 2", "the output")]


async def test_code_blocks_copy_from_the_key_in_turn_and_from_their_copy_affordance():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 50)) as pilot:
        await transcript.set_messages(conversation()[:2])
        await pilot.pause()
        transcript.focus()
        await pilot.press("up", "c", "c", "c")
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [
            ("print('one')", "python code block 1 of 2"), ("echo two", "bash code block 2 of 2"),
            ("print('one')", "python code block 1 of 2")]
        app.seen.clear()
        body = transcript.query_one(MarkdownBody)
        rows = [strip.text for strip in body.render_lines(body.region.reset_offset)]
        y = next(i for i, row in enumerate(rows) if "copy bash" in row)
        x = rows[y].index("copy bash")
        await pilot.click(body, offset=(x, y))
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [("echo two", "bash code block 2 of 2")]
        assert transcript.selected == "a1"  # the click on "copy" did not move the selection


async def test_a_click_selects_the_message_under_it():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 50)) as pilot:
        await transcript.set_messages(conversation())
        await pilot.pause()
        view = next(v for v in transcript.query(MessageView) if v.entry_id == "u2")
        await pilot.click(view, offset=(3, 1))
        await pilot.pause()
        assert transcript.selected == "u2" and selected_views(transcript) == ["u2"]


async def test_home_and_end_jump_to_the_ends_of_a_long_branch_at_once():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages(long_branch(2000))
        await pilot.pause()
        transcript.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: "message 0" in screen_text(app))
        assert transcript.selected == "m0" and transcript.start == 0
        assert len(transcript.query(MessageView)) <= MAX_MOUNTED
        await pilot.press("end")
        await wait_for(pilot, lambda: "reply 1999" in screen_text(app))
        assert transcript.selected == "m1999" and transcript.end == 2000
        assert len(transcript.query(MessageView)) <= MAX_MOUNTED
        await pilot.press("up")
        await wait_for(pilot, lambda: transcript.selected == "m1998")
        assert "message 1998" in screen_text(app)


async def test_the_selection_walks_past_the_mounted_window_and_stays_in_view():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages(long_branch(300))
        await pilot.pause()
        transcript.focus()
        await pilot.press("end")
        for _ in range(WINDOW + 5):
            await pilot.press("up")
        target = f"m{299 - WINDOW - 5}"
        await wait_for(pilot, lambda: transcript.selected == target)
        await pilot.pause()
        assert transcript.start < 300 - WINDOW
        view = transcript.view_of(target)
        assert view is not None and view.has_class("-selected")
        assert transcript.scrollable_content_region.contains_region(view.region) or view.region.y >= transcript.region.y


async def test_scrolling_down_from_the_top_keeps_the_mounted_window_bounded():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages(long_branch(1000))
        await pilot.pause()
        transcript.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: transcript.start == 0)
        for _ in range(12):
            transcript.scroll_end(animate=False, immediate=True)
            await pilot.pause()
            await pilot.pause()
        assert transcript.end > MAX_MOUNTED  # it grew downwards...
        assert len(transcript.query(MessageView)) <= MAX_MOUNTED  # ...and let go of the top


async def test_the_selection_goes_through_an_expanded_cards_rows():
    transcript = Transcript()
    app = Host(transcript)
    card = CompactionEntry(id="k1", parent_id="x", summary="the summary", tokens_before=100, tokens_after=10)
    async with app.run(size=(90, 40)) as pilot:
        await transcript.set_messages([("k1", card), ("u9", UserMessage(content="after the compaction"))])
        await pilot.pause()
        transcript.focus()
        await pilot.press("home", "enter")  # the card opens; the App answers with the originals
        await wait_for(pilot, lambda: bool(app.posted(Transcript.ExpandCompaction)))
        await transcript.show_originals("k1", [("o1", UserMessage(content="old q")), ("o2", reply("old a"))])
        await pilot.pause()
        await pilot.press("down", "down")
        await wait_for(pilot, lambda: transcript.selected == "o2")
        assert transcript.query(OriginalLines)[0].selected == 1
        await pilot.press("y", "r")
        await pilot.pause()
        assert [(m.text, m.what) for m in app.posted(Transcript.CopyRequested)] == [("old a", "the reply")]
        assert [m.entry_id for m in app.posted(Transcript.RetryRequested)] == ["o2"]
        await pilot.press("enter")  # opens it in full
        await wait_for(pilot, lambda: any(v.entry_id == "o2" for v in transcript.query(MessageView)))
        await pilot.press("down")
        await wait_for(pilot, lambda: transcript.selected == "u9")
        assert selected_views(transcript) == ["u9"]
        assert all(lines.selected is None for lines in transcript.query(OriginalLines))


async def test_a_thousand_originals_stay_a_handful_of_widgets():
    transcript = Transcript()
    app = Host(transcript)
    card = CompactionEntry(id="k1", parent_id="x", summary="s", tokens_before=100, tokens_after=10)
    async with app.run(size=(80, 24)) as pilot:
        await transcript.set_messages([("k1", card)])
        await pilot.pause()
        transcript.query_one(CompactionCard).toggle()
        await transcript.show_originals("k1", long_branch(1000))
        await pilot.pause()
        box = transcript.query_one(".originals")
        assert len(box.children) == 2  # the note and one run of rows
        assert transcript.query_one(OriginalLines).size.height == 1000
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert transcript.query_one(OriginalLines).size.height == 1000  # a row each, whatever the width
        transcript.focus()
        transcript.scroll_to(y=500, animate=False, immediate=True)
        await pilot.pause()
        await pilot.press("up")  # nothing selected: the lowest row on screen
        await pilot.pause()
        lines = transcript.query_one(OriginalLines)
        bottom = transcript.scrollable_content_region.bottom - 1
        assert lines.selected == bottom - lines.region.y and transcript.selected == f"m{lines.selected}"
        await pilot.press("home", *["down"] * 61)
        await wait_for(pilot, lambda: transcript.selected == "m60")
        await pilot.pause()
        lines = transcript.query_one(OriginalLines)
        assert lines.selected == 60
        row = lines.content_region.y + 60
        assert transcript.scrollable_content_region.y <= row < transcript.scrollable_content_region.bottom


async def test_a_new_path_keeps_a_selection_it_still_holds():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 40)) as pilot:
        await transcript.set_messages(conversation())
        await pilot.pause()
        transcript.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: transcript.selected == "u1")
        await transcript.set_messages(conversation()[:3])
        assert transcript.selected == "u1" and selected_views(transcript) == ["u1"]
        await transcript.set_messages(conversation()[3:])
        assert transcript.selected is None


async def test_copy_target_for_the_copy_command():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 40)) as pilot:
        assert transcript.copy_target() is None
        await transcript.set_messages(conversation() + [("t9", ToolResultMessage(tool_call_id="x", tool_name="read",
                                                                                 content=[TextContent(text="out")]))])
        await pilot.pause()
        assert transcript.copy_target() == ("plain answer", "the reply")
        assert transcript.copy_target(1) == ("out", "the output")
        assert transcript.copy_target(3) == ("second question", "your message")
        assert transcript.copy_target(99) is None and transcript.copy_target(0) is None


async def test_a_new_path_forgets_the_sibling_marks_of_the_old_one():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(90, 40)) as pilot:
        await transcript.set_messages(conversation())
        transcript.set_siblings("u2", 1, 2)
        await pilot.pause()
        assert "‹ 1/2 ›" in screen_text(app)
        await transcript.set_messages(conversation())  # the same ids, in a session where u2 has no siblings
        await pilot.pause()
        assert "1/2" not in screen_text(app)
        transcript.focus()
        await pilot.press("right_square_bracket")
        assert app.posted(Transcript.SiblingRequested) == []


async def test_a_short_transcript_stays_whole_after_home_and_growth():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        await transcript.set_messages([(f"s{i}", UserMessage(content=f"short {i}")) for i in range(3)])
        await pilot.pause()
        transcript.focus()
        await pilot.press("home", "pageup")  # both would release the anchor of a content that fits
        await pilot.pause()
        for i in range(3, 7):
            await transcript.append_message((f"s{i}", UserMessage(content=f"short {i}")))
        await pilot.pause()
        text = screen_text(app)
        assert all(f"short {i}" in text for i in range(7))


async def test_a_sibling_switch_stays_at_that_message_with_the_new_sibling_selected():
    transcript = Transcript()
    app = Host(transcript)
    async with app.run(size=(80, 30)) as pilot:
        path = long_branch(200)
        await transcript.set_messages(path)
        transcript.set_siblings("m100", 1, 2)
        await transcript.highlight("m100")
        await pilot.pause()
        transcript.focus()
        await pilot.press("right_square_bracket")
        assert [(m.entry_id, m.delta) for m in app.posted(Transcript.SiblingRequested)] == [("m100", 1)]
        # the App answers with the new path: the sibling x100 in m100's place, then its own replies
        after = [(f"y{i}", UserMessage(content=f"later {i}")) for i in range(60)]
        await transcript.set_messages(path[:100] + [("x100", UserMessage(content="the other prompt")), ("x101", reply("its reply"))] + after)
        transcript.set_siblings("x100", 2, 2)
        await pilot.pause()
        await pilot.pause()
        assert transcript.selected == "x100"
        assert "the other prompt" in screen_text(app) and "‹ 2/2 ›" in screen_text(app)
        # any other new path (not that switch's result) shows its end as before
        await transcript.set_messages(long_branch(150))
        await pilot.pause()
        assert transcript.selected is None and "reply 149" in screen_text(app)
