"""The transcript inside the real App: its sibling switcher after a fork, its selection and actions."""

from __future__ import annotations

from treechat.session.session import Session
from treechat.storage.model import AssistantMessage, TextContent, UserMessage
from treechat.widgets.transcript.message_view import CompactionCard, MessageView
from treechat.widgets.transcript.originals import OriginalLines
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import screen_text, wait_for


async def branched(catalog) -> tuple[str, dict[str, str]]:
    """q1 → a1 → (q2 → a2 | q2b → a2b), the leaf on the second branch."""
    storage = await catalog.create()
    s = await Session.open(storage)

    async def say(q: str, a: str) -> tuple[str, str]:
        u = await s.append_message(UserMessage(content=q))
        r = await s.append_message(AssistantMessage(content=[TextContent(text=a)], provider="openai", model="fake-model"))
        return u, r

    ids: dict[str, str] = {}
    ids["q1"], ids["a1"] = await say("q1", "a1")
    ids["q2"], ids["a2"] = await say("q2", "a2")
    await s.move_to(ids["a1"])
    ids["q2b"], ids["a2b"] = await say("q2b", "a2b")
    return storage.session_id, ids


def header_of(app, entry_id: str):
    view = next(v for v in app.query_one(Transcript).query(MessageView) if v.entry_id == entry_id)
    assert view.header is not None
    return view.header


async def click_arrow(pilot, header, which: int) -> None:
    left, right = header._arrows
    assert left >= 0, "no ‹ n/m › on this message"
    await pilot.click(header, offset=(left if which < 0 else right, 0))
    await pilot.pause()


async def test_the_sibling_switcher_after_a_fork_matches_the_new_session(make_app):
    async with make_app() as (app, pilot):
        sid, ids = await branched(app.chat.catalog)
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()
        assert "‹ 2/2 ›" in str(header_of(app, ids["q2b"]).render())
        tree = app.query_one(TreeView)
        tree.focus()
        tree.move_cursor_to(ids["a2b"])
        await pilot.press("f")
        await wait_for(pilot, lambda: app.chat.session_id != sid, what="the fork")
        await pilot.pause()
        # the new session holds one path: q2b has no alternatives there, so no switcher that does nothing
        assert app.chat.tree.siblings(ids["q2b"]) == [ids["q2b"]]
        assert header_of(app, ids["q2b"])._arrows == (-1, -1)
        assert "2/2" not in screen_text(app)
        # a sibling made in the fork gets a switcher, and clicking it switches
        await app.chat.move_to(ids["a1"])
        s = app.chat.session
        await s.append_message(UserMessage(content="q2c"))
        await pilot.pause()
        await app.chat.move_to(s.leaf_id)
        await pilot.pause()
        q2c = s.leaf_id
        await click_arrow(pilot, header_of(app, q2c), -1)
        await wait_for(pilot, lambda: app.chat.session.leaf_id == ids["a2b"], what="the switch back to q2b's branch")


async def test_an_expanded_compaction_card_in_the_app_lists_its_originals_as_rows(make_app):
    async with make_app(size=(100, 30)) as (app, pilot):
        storage = await app.chat.catalog.create()
        s = await Session.open(storage)
        ids = []
        for i in range(60):
            ids.append(await s.append_message(UserMessage(content=f"old question {i}")))
            ids.append(await s.append_message(AssistantMessage(content=[TextContent(text=f"old answer {i}")],
                                                               provider="openai", model="fake-model")))
        await s.append_compaction("## Goal\nkeep going", ids[-2], 50_000, tokens_after=2_000, trigger="manual")
        await app.chat.open(await app.chat.catalog.open(storage.session_id))
        await pilot.pause()
        transcript = app.query_one(Transcript)
        await pilot.click(CompactionCard)
        await wait_for(pilot, lambda: bool(transcript.query(OriginalLines)), what="the originals")
        rows = transcript.query_one(OriginalLines)
        assert rows.count == 118 and len(transcript.query(MessageView)) == 3  # the card and the kept tail
        assert "compacted · manual" in screen_text(app) and "▸ you · old question 0" in screen_text(app)  # from its top
        transcript.focus()
        await pilot.press("home", "down", "down", "enter")
        await wait_for(pilot, lambda: any(v.entry_id == ids[1] for v in transcript.query(MessageView)),
                       what="the second original opened in full")
        assert transcript.selected == ids[1]
        await pilot.press("escape")
        assert transcript.selected is None and app.chat.is_running is False


async def test_sending_brings_the_end_back_into_view_wherever_the_reader_was(make_app, fake):
    """Scrolled far up a long branch (older chunks mounted, the end unmounted), the user sends:
    their message and its answer show at the bottom, followed as the answer streams."""
    from .conftest import type_text

    async with make_app(size=(80, 24)) as (app, pilot):
        storage = await app.chat.catalog.create()
        s = await Session.open(storage)
        for i in range(150):
            await s.append_message(UserMessage(content=f"question {i}"))
            await s.append_message(AssistantMessage(content=[TextContent(text=f"answer {i}")], provider="openai",
                                                    model="fake-model"))
        await app.chat.open(await app.chat.catalog.open(storage.session_id))
        transcript = app.query_one(Transcript)
        await wait_for(pilot, lambda: len(transcript.items) == 300, what="the branch")
        transcript.action_select_first()  # Home in the transcript: the first message, far from the end
        await wait_for(pilot, lambda: transcript.start == 0, what="the first message mounted")
        assert transcript.end < len(transcript.items)
        fake.script_openai(["the reply ", "to the new question"])
        await type_text(pilot, "a new question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "to the new question" in screen_text(app), what="the reply on screen")
        assert "a new question" in screen_text(app)
        assert transcript.following and transcript.scroll_y == transcript.max_scroll_y
