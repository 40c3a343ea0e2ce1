"""The real App follows what another process or machine writes, live: a message added elsewhere
shows in the transcript, the tree and the status; an open sessions list refreshes. A second
catalog on the same store (SQLite file, JSONL folder, PostgreSQL database) is the other side."""

from __future__ import annotations

import pytest

from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, Usage, UserMessage
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.screens import SessionsScreen
from treechat.widgets.tree.view import TreeView

from .conftest import screen_text, wait_for

KINDS = ["sqlite", "jsonl", "postgres"]


@pytest.fixture(params=KINDS)
def kind(request):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # TREECHAT_DATABASE_URL names a fresh database
    return request.param


async def test_a_message_another_machine_adds_shows_in_the_app_live(make_app, kind, tmp_path):
    async with make_app(storage_kind=kind) as (app, pilot):
        chat = app.chat
        await chat.session.append_message(UserMessage(content="started here"))
        await pilot.pause()
        other = await open_catalog(kind, tmp_path)
        try:
            theirs = await Session.open(await other.open(chat.session_id))
            await theirs.append_message(UserMessage(content="typed on the laptop"))
            usage = Usage(input=1200, output=34, total_tokens=1234)
            reply = await theirs.append_message(AssistantMessage(
                content=[TextContent(text="answered on the laptop")], provider="openai", model="fake-model",
                usage=usage))
            await wait_for(pilot, lambda: "answered on the laptop" in screen_text(app), what="the reply on screen",
                           rounds=1500)
            assert chat.leaf_id == reply
            assert "typed on the laptop" in screen_text(app)
            tree = app.query_one(TreeView)
            assert reply in app.chat.tree.by_id and tree.leaf_id == reply
            await wait_for(pilot, lambda: app.query_one(StatusBar).tokens_in == 1200, what="the status from the reply")
        finally:
            await other.close()


async def test_an_open_sessions_list_shows_a_session_made_elsewhere(make_app, kind, tmp_path):
    async with make_app(storage_kind=kind) as (app, pilot):
        await app.chat.session.append_message(UserMessage(content="mine"))
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), what="the sessions list")
        other = await open_catalog(kind, tmp_path)
        try:
            s = await Session.open(await other.create(cwd="/laptop"))
            await s.append_message(UserMessage(content="a session from the laptop"))
            await wait_for(pilot, lambda: "a session from the laptop" in screen_text(app), what="the new row",
                           rounds=1500)
            assert isinstance(app.screen, SessionsScreen)
        finally:
            await other.close()
