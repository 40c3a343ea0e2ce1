"""One prompt to several models in the app (issue 39): `/compare … -- PROMPT` and the model picker's
marks open the side-by-side view, which the controller's events fill as the replies stream (the
fake holds every reply until all the requests are in); Enter there moves the leaf to the chosen
branch, Esc leaves it where it was; at 80 columns one reply shows at a time."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from tests.fake_provider import FakeProvider, openai_chunks, sse_frame
from treechat.storage.model import AssistantMessage, MessageEntry, message_text
from treechat.widgets.compare.view import CompareView
from treechat.widgets.screens import ModelPicker

from .conftest import type_text, wait_for


class Together:
    """Each model's reply ("re MODEL"), held at its first piece until `count` requests are in."""

    def __init__(self, fake: FakeProvider, count: int) -> None:
        self.fake, self.count = fake, count  # (count 0: until the test sets all_in)
        self.all_in = asyncio.Event()
        fake.responder = self._answer

    def _answer(self, request: Any) -> list[Any] | None:
        if not isinstance(request.body, dict) or "messages" not in request.body:
            return None
        if self.count and len(self.fake.requests) >= self.count:
            self.all_in.set()
        frames = [sse_frame(c) for c in openai_chunks([f"re {request.body['model']}", " done"])]
        return self.fake.sse_steps(frames, gate=self.all_in, gate_after=1)


def shows(widget: Any, words: str) -> bool:
    return words in str(widget.render())


def view_of(app: Any) -> CompareView:
    assert isinstance(app.screen, CompareView)
    return app.screen


def all_done(app: Any) -> bool:
    return isinstance(app.screen, CompareView) and all(s == "done" for s, _ in view_of(app)._states.values()) \
        and len(view_of(app)._states) == len(view_of(app).columns)


async def send_compare(app: Any, pilot: Any, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, CompareView), what="the compare view")


async def test_compare_streams_side_by_side_and_enter_takes_a_reply(make_app, fake) -> None:
    held = Together(fake, 0)
    async with make_app(size=(160, 45)) as (app, pilot):
        leaf = app.chat.leaf_id
        await send_compare(app, pilot, "/compare openai/m1 openai/m2 openai/m3 -- which one?")
        view = view_of(app)
        await fake.until_requests(3)  # all three out at once
        # the first piece of each streams into its column (the replies are held there, off screen)
        await wait_for(pilot, lambda: [view._texts.get(r) for r, _ in view.columns] == ["re m1", "re m2", "re m3"],
                       what="three replies streaming")
        assert {s for s, _ in view._states.values()} == {"streaming"}
        held.all_in.set()
        await wait_for(pilot, lambda: all_done(app), what="three replies")
        assert [m for _, m in view.columns] == ["openai/m1", "openai/m2", "openai/m3"]
        assert [view._texts[r] for r, _ in view.columns] == ["re m1 done", "re m2 done", "re m3 done"]
        assert not view.one_at_a_time  # 160 columns: all three at once
        assert app.chat.leaf_id == leaf  # nothing chosen yet
        await pilot.press("right", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareView), what="the view to close")
        await wait_for(pilot, lambda: app.chat.leaf_id != leaf, what="the leaf to move")
        branch = await app.chat.session.get_branch()
        last = branch[-1]
        assert isinstance(last, MessageEntry) and isinstance(last.message, AssistantMessage)
        assert message_text(last.message) == "re m2 done"


async def test_esc_leaves_the_leaf_and_the_replies_stay_as_branches(make_app, fake) -> None:
    Together(fake, 2)
    async with make_app(size=(80, 24)) as (app, pilot):
        leaf = app.chat.leaf_id
        await send_compare(app, pilot, "/compare openai/m1 openai/m2 -- hi")
        assert view_of(app).one_at_a_time  # 80 columns: one reply at a time, a switcher above
        await wait_for(pilot, lambda: all_done(app), what="two replies")
        await pilot.press("tab")
        assert view_of(app).focused_run == view_of(app).columns[1][0]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareView), what="the view to close")
        assert app.chat.leaf_id == leaf
        assert len(await app.chat.session.get_children(leaf)) == 2  # two sibling branches


async def test_marks_in_the_model_picker_send_the_composers_text_to_each(make_app, fake) -> None:
    Together(fake, 2)
    async with make_app(size=(140, 44)) as (app, pilot):
        await type_text(pilot, "compare me")
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker), what="the model picker")
        picker = app.screen
        await pilot.press("space", *"openai/m2", "space")  # the model in use, then one typed (its "use" row)
        assert len(picker.marked) == 2 and "2 marked" in str(picker.query_one("#hint").render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareView), what="the compare view")
        assert [m for _, m in view_of(app).columns] == picker.marked == ["openai/fake-model", "openai/m2"]
        await wait_for(pilot, lambda: all_done(app), what="two replies")
        assert app.query_one("Composer").text == ""  # the text went to both


async def test_bad_input_is_one_line_and_gives_the_text_back(make_app, fake) -> None:
    async with make_app() as (app, pilot):
        banner = app.query_one("#banner")
        for typed, said in (("/compare openai/m1 -- hi", "two models or more"),
                            ("/compare openai/m1 nowhere -- hi", "Unknown model 'nowhere'"),
                            ("/compare " + " ".join(f"openai/m{i}" for i in range(5)) + " -- hi", "max_runs = 4")):
            await type_text(pilot, typed)
            await pilot.press("enter")
            await wait_for(pilot, partial(shows, banner, said), what=said)
            assert app.query_one("Composer").text == typed and fake.requests == []
            app.query_one("Composer").set_text("")
        await type_text(pilot, "/compare openai/m1 openai/m2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_one("Composer").text == "/compare openai/m1 openai/m2 -- ",
                       what="the composer to ask for the prompt")
