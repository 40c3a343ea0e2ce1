"""Issue 21 item 3: typing with natural pauses never answers the bash confirmation. Every key that
is not an answer starts the quiet period again, so "wait I have a question" typed at 80 ms a key
with 0.6 s between the words neither runs the command nor allows it for the session (before, the
`a` of "have" came more than half a second after the last ignored key and allowed it)."""

from __future__ import annotations

import json

from textual import events

from tests.tui.conftest import fake, make_app, screen_text, type_text, wait_for  # noqa: F401  (fixtures)
from treechat.widgets.screens import ToolConfirmDialog
from treechat.widgets.screens.tool_confirm import IGNORED

SETTLE = ToolConfirmDialog.ARM_DELAY + 0.1


def bash_call(call_id: str, command: str) -> dict[str, str]:
    return {"id": call_id, "name": "bash", "arguments": json.dumps({"command": command})}


def typed(text: str, start: float, *, per_key: float = 0.08, between_words: float = 0.6) -> list[events.Key]:
    """Keys as a person types them, stamped with when they were typed (the dialog decides by the
    stamps, so the test does not depend on how fast this machine is)."""
    keys, at = [], start
    for ch in text:
        at += between_words if ch == " " else per_key
        key = events.Key("space" if ch == " " else ch, ch)
        key.time = at
        keys.append(key)
    return keys


async def test_typing_with_pauses_between_words_never_answers(make_app, fake):  # noqa: F811
    fake.script_openai(tool_calls=[bash_call("c1", "echo from-the-tool")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolConfirmDialog) and app.screen.shown_at < 1e300,
                       what="the confirmation")
        dialog = app.screen
        keys = typed("wait I have a question", dialog.shown_at)
        for key in keys:
            app.post_message(key)
        await pilot.pause()
        await pilot.pause()
        assert app.screen is dialog, "typing answered the confirmation"
        assert (app.chat.session_id, "echo from-the-tool") not in app.allowed_commands
        assert len(fake.requests) == 1 and IGNORED in screen_text(app)
        dialog.dismiss(False)  # (a real answer would have to wait out the stamps, which run ahead of the clock)
        await wait_for(pilot, lambda: len(fake.requests) == 2, what="the refusal")
        assert "from-the-tool" not in json.dumps(fake.requests[1].body["messages"][-1])


async def test_tab_moves_between_buttons_but_enter_right_after_it_waits(make_app, fake):  # noqa: F811
    fake.script_openai(tool_calls=[bash_call("c1", "echo from-the-tool")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolConfirmDialog) and app.screen.shown_at < 1e300,
                       what="the confirmation")
        dialog = app.screen
        await pilot.pause(SETTLE)
        await pilot.press("tab", "enter")  # focus moves on, but Enter at once is not a deliberate answer
        await pilot.pause()
        assert app.screen is dialog and dialog.focused is not None and dialog.focused.id == "session"
        await pilot.pause(SETTLE)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(fake.requests) == 2, what="the refusal")
