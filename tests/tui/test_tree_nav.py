"""The tree panel and history navigation through the real App: click-to-move, edit-and-resend,
siblings, labels, back, sessions, search → jump, resume (issue 5 §3, §6, §9)."""

from __future__ import annotations

from treechat.session.session import Session
from treechat.storage.model import AssistantMessage, TextContent, UserMessage
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import LabelDialog, SearchScreen, SessionsScreen
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import idle, path_texts, screen_text, type_text, wait_for


async def seed(catalog, turns: list[tuple[str, str]], name: str | None = None) -> tuple[str, list[str]]:
    """A session with these (user, assistant) turns; returns its id and the entry ids."""
    storage = await catalog.create()
    s = await Session.open(storage)
    ids = []
    for q, a in turns:
        ids.append(await s.append_message(UserMessage(content=q)))
        ids.append(await s.append_message(AssistantMessage(content=[TextContent(text=a)], provider="openai", model="fake-model")))
    if name:
        await s.append_session_info(name)
    return storage.session_id, ids


async def click_row(pilot, entry_id: str) -> None:
    tree = pilot.app.query_one(TreeView)
    tree.move_cursor_to(entry_id)  # scrolls it into view
    await pilot.pause()
    index = tree.layout_data.index_of(entry_id)
    region = tree.scrollable_content_region
    y = index - round(tree.scroll_y)
    await pilot.click(TreeView, offset=(region.x - tree.region.x + 4, region.y - tree.region.y + y))
    await pilot.pause()


async def test_clicking_a_user_message_moves_to_its_parent_and_fills_the_composer(make_app, fake, tmp_path):
    fake.script_openai(["second answer, take two"])
    async with make_app() as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("first question", "first answer"), ("second question", "second answer")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()
        await click_row(pilot, ids[2])  # the second user message
        await wait_for(pilot, lambda: app.chat.session.leaf_id == ids[1], what="the leaf to move to its parent")
        assert app.query_one(Composer).text == "second question"
        # edit and resend: a new sibling; the old branch is still there
        app.query_one(Composer).insert(" (edited)")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the new reply")
        assert (await path_texts(app))[-2:] == [("user", "second question (edited)"), ("assistant", "second answer, take two")]
        assert len(await app.chat.session.get_children(ids[1])) == 2
        await pilot.pause()
        assert "2/2" in screen_text(app)  # the sibling switcher on the new prompt
        assert await app.chat.session.get_entry(ids[3]) is not None
        # the transcript offers ‹ n/m › at the fork and switching goes back to the old branch
        new_user = (await app.chat.session.get_branch())[-2].id
        app.query_one(Transcript).post_message(Transcript.SiblingRequested(new_user, -1))
        await wait_for(pilot, lambda: app.chat.session.leaf_id == ids[3], what="the sibling switch")
        assert (await path_texts(app))[-1] == ("assistant", "second answer")


async def test_clicking_an_assistant_message_moves_the_leaf_to_it(make_app):
    async with make_app() as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("q1", "a1"), ("q2", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()
        await click_row(pilot, ids[1])
        await wait_for(pilot, lambda: app.chat.session.leaf_id == ids[1], what="the move")
        assert app.query_one(Composer).text == ""
        assert [t for _, t in await path_texts(app)] == ["q1", "a1"]
        # Backspace in the tree goes back to where we were
        app.query_one(TreeView).focus()
        await pilot.press("backspace")
        await wait_for(pilot, lambda: app.chat.session.leaf_id == ids[3], what="back")


async def test_label_from_the_tree(make_app):
    async with make_app() as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("q1", "a1")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await pilot.pause()  # the view follows the controller's events
        tree = app.query_one(TreeView)
        tree.focus()
        tree.move_cursor_to(ids[0])
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, LabelDialog), what="the label dialog")
        for ch in "plan-b":
            await pilot.press(ch)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.label_of(ids[0]) == "plan-b", what="the label")
        assert await app.chat.session.get_label(ids[0]) == "plan-b"
        assert "plan-b" in screen_text(app)


async def test_switching_sessions_with_the_sessions_screen(make_app):
    async with make_app() as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("about cats", "meow")], name="cats")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), what="the sessions screen")
        app.screen.dismiss(SessionsScreen.Resume(sid))
        await wait_for(pilot, lambda: app.chat.session.session_id == sid, what="the switch")
        await pilot.pause()
        assert "cats" in screen_text(app) and "meow" in screen_text(app)


async def test_search_jumps_to_an_entry_on_an_abandoned_branch(make_app):
    async with make_app() as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("start", "ok"), ("try the zebra approach", "zebra failed")])
        s = await Session.open(await app.chat.catalog.open(sid))
        await s.move_to(ids[1])
        await s.append_message(UserMessage(content="try the other approach"))
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen), what="the search screen")
        hits = await app.chat.catalog.search("zebra")
        hit = next(h for h in hits if h.entry_id == ids[2])
        app.screen.dismiss(SearchScreen.Chosen(hit))
        await wait_for(pilot, lambda: app.chat.session.session_id == sid and app.chat.preview_id == ids[2], what="the jump")
        await pilot.pause()
        assert app.query_one(TreeView).cursor_id == ids[2]
        assert "zebra" in screen_text(app)
        assert app.chat.session.leaf_id != ids[2]  # viewing, not moving: the leaf stays


async def test_model_and_thinking_changes_become_entries(make_app):
    async with make_app() as (app, pilot):
        await app.chat.set_model("openai/other-model")
        await pilot.pause()
        changes = await app.chat.session.storage.find_entries("model_change")
        assert changes and changes[-1].model_id == "other-model"
        await app.models.cmd_thinking("high")
        await pilot.pause()
        levels = await app.chat.session.storage.find_entries("thinking_level_change")
        assert levels[-1].thinking_level in ("high", "off")  # clamped to what the model supports


async def test_resume_latest_shows_everything_where_it_was(make_app, fake, tmp_path):
    fake.script_openai(["remembered"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "remember this")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the reply")
        sid, leaf = app.chat.session.session_id, app.chat.session.leaf_id
    async with make_app(session_id=sid) as (app, pilot):
        assert app.chat.session.leaf_id == leaf
        await pilot.pause()
        assert "remembered" in screen_text(app) and "remember this" in screen_text(app)


async def test_up_on_an_empty_composer_recalls_this_branchs_prompts_after_reopening(make_app):
    async with make_app() as (app, pilot):
        sid, _ = await seed(app.chat.catalog, [("the first prompt", "a1"), ("the second prompt", "a2")])
        await app.chat.open(await app.chat.catalog.open(sid))
        app.ui(Composer).focus()
        await pilot.press("up")
        assert app.ui(Composer).text == "the second prompt"
        await pilot.press("up")
        assert app.ui(Composer).text == "the first prompt"


async def test_hovering_a_reply_shows_its_model_and_tokens(make_app, fake):
    from treechat.storage.model import Usage

    async with make_app() as (app, pilot):
        storage = await app.chat.catalog.create()
        s = await Session.open(storage)
        await s.append_message(UserMessage(content="q"))
        reply = await s.append_message(AssistantMessage(content=[TextContent(text="a")], provider="openai",
                                                        model="fake-model", usage=Usage(input=1200, output=34)))
        await app.chat.open(storage)
        await pilot.pause()
        tree = app.query_one(TreeView)
        tree._tips.hover(reply)  # the pointer rests on the reply's row
        await wait_for(pilot, lambda: "1,200 in / 34 out" in str(tree.tooltip or ""), what="the details")
        assert "openai/fake-model" in str(tree.tooltip)


async def test_entries_another_process_writes_show_in_the_tree_within_a_second(make_app, tmp_path):
    from treechat.storage import open_catalog

    async with make_app() as (app, pilot):
        sid, ids = await seed(app.chat.catalog, [("q1", "a1")])
        await app.chat.open(await app.chat.catalog.open(sid))
        await app.chat.move_to(ids[0])  # we went back: what the other writes under a1 is another branch
        await pilot.pause()
        theirs = await open_catalog("sqlite", tmp_path)  # another process's view of the same home
        try:
            other = await Session.open(await theirs.open(sid))
            assert other.leaf_id == ids[0]  # the last move wins: the stored leaf is ours
            await other.move_to(ids[1])
            new = await other.append_message(UserMessage(content="written elsewhere"))
            await wait_for(pilot, lambda: app.query_one(TreeView).layout_data.index_of(new) is not None,
                           what="the other process's entry in the tree", rounds=300)
            assert app.chat.leaf_id == ids[0]  # the leaf stays (tests/tui/test_live_app.py: it follows)
        finally:
            await theirs.close()
