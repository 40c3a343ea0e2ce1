"""The App on a big session (`LOAD_LATER` made small): the branch and the composer come first, the
tree panel shows the branch and says it is reading the rest, then draws the whole tree; the
`‹ n/m ›` marks and a sibling switch follow. The transcript holds a window of a long branch:
Home reads its first messages, End its last."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import treechat.chat.tree as chat_tree
from treechat.session.session import Session
from treechat.storage.model import AssistantMessage, TextContent, UserMessage
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import screen_text, wait_for


async def long_session(catalog: Any, turns: int) -> tuple[str, list[str]]:
    storage = await catalog.create()
    s = await Session.open(storage)
    ids: list[str] = []
    for i in range(turns):
        ids.append(await s.append_message(UserMessage(content=f"question {i}")))
        ids.append(await s.append_message(AssistantMessage(content=[TextContent(text=f"answer {i}")],
                                                           provider="openai", model="fake-model")))
    await s.move_to(ids[-4])  # a second reply to the last question but one
    ids.append(await s.append_message(AssistantMessage(content=[TextContent(text="another answer")],
                                                       provider="openai", model="fake-model")))
    return storage.session_id, ids


async def test_a_big_session_is_usable_before_its_tree_is_read(make_app, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_tree, "LOAD_LATER", 50)
    opened = asyncio.Event()
    read = chat_tree.TreeLoad._read

    async def held(self: chat_tree.TreeLoad, storage: Any) -> None:
        await opened.wait()
        await read(self, storage)

    monkeypatch.setattr(chat_tree.TreeLoad, "_read", held)
    async with make_app(size=(120, 36)) as (app, pilot):
        sid, ids = await long_session(app.chat.catalog, 150)
        await app.chat.resume(sid)
        tree, transcript = app.query_one(TreeView), app.query_one(Transcript)
        await wait_for(pilot, lambda: "another answer" in screen_text(app), what="the end of the branch")
        assert "reading" in str(tree.border_subtitle) and len(tree.layout_data) == len(app.chat.tree)
        assert len(transcript.items) == 298 and not transcript.items.is_loaded(0, 10)  # a window of the branch
        opened.set()
        await wait_for(pilot, lambda: len(tree.layout_data) == 301, what="the whole tree in the panel")
        assert "reading" not in str(tree.border_subtitle)
        await wait_for(pilot, lambda: "‹ 2/2 ›" in screen_text(app), what="the sibling marks")
        transcript.focus()
        await pilot.press("home")
        await wait_for(pilot, lambda: "question 0" in screen_text(app), what="the first message, read on request")
        assert transcript.selected == ids[0]
        await pilot.press("end")
        await wait_for(pilot, lambda: "another answer" in screen_text(app), what="back at the end")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: "answer 149" in screen_text(app) and app.chat.leaf_id == ids[-2],
                       what="the other reply's branch, by a sibling switch")
