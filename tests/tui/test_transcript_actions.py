"""The transcript's message actions reach the controller (issue 10 §5): edit & resend, retry,
copy, fork and label from a selected message."""

from __future__ import annotations

from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import LabelDialog
from treechat.widgets.transcript.view import Transcript

from .conftest import idle, path_texts, type_text, wait_for


async def test_actions_on_selected_messages(make_app, fake, monkeypatch):
    monkeypatch.setenv("SSH_TTY", "/dev/pts/0")  # no platform clipboard command here
    fake.script_openai(["first answer"])
    fake.script_openai(["second answer"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "the question")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause()
        transcript = app.ui(Transcript)
        transcript.focus()
        await pilot.press("end")  # the last message: the reply
        await pilot.press("y")
        await wait_for(pilot, lambda: app.clipboard == "first answer", what="the copy")
        await pilot.press("r")  # ask again: a sibling reply
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the retry")
        await pilot.pause()
        assert (await path_texts(app))[-1] == ("assistant", "second answer")
        transcript.focus()
        await pilot.press("end", "up")  # the prompt
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, LabelDialog), what="the label dialog")
        await pilot.press("escape")
        await pilot.pause()
        prompt = next(e for e in await app.chat.session.get_branch()
                      if e.type == "message" and e.message.role == "user")
        transcript.focus()
        await pilot.press("end", "up", "e")  # edit & resend: the prompt goes to the composer
        await wait_for(pilot, lambda: app.ui(Composer).text == "the question", what="the prompt to edit")
        assert app.chat.leaf_id == prompt.parent_id  # the leaf moved to just before it
