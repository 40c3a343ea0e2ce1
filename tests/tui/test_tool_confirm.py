"""The bash tool's confirmation cannot be answered by typing (issue 15 item 3): keys typed before
it appeared stay with the composer, nothing answers in its first half second or while typing goes
on, Enter refuses, `y` or a click approves after a pause, `a` allows the command for the session."""

from __future__ import annotations

import asyncio
import json

from textual import events

from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import ToolConfirmDialog
from treechat.widgets.screens.tool_confirm import IGNORED

from .conftest import idle, path_texts, screen_text, type_text, wait_for

SETTLE = ToolConfirmDialog.ARM_DELAY + 0.1


def bash_call(call_id: str, command: str) -> dict[str, str]:
    return {"id": call_id, "name": "bash", "arguments": json.dumps({"command": command})}


def on_screen(app, command: str) -> bool:
    """The confirmation is up and drawn: what a person sees before they can react to it."""
    screen = app.screen
    return isinstance(screen, ToolConfirmDialog) and screen.shown_at < float("inf") and command in screen_text(app)


async def results(app) -> list[str]:
    return [text for role, text in await path_texts(app) if role == "toolResult"]


async def test_typing_while_the_confirmation_appears_never_runs_the_command(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(tool_calls=[bash_call("c1", "echo from-the-tool")], gate=gate, gate_after=0)
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1, what="the request")
        await type_text(pilot, "just try it")  # the user keeps typing while the model works
        early = [events.Key(ch, ch) for ch in " b"]  # typed now, handled once the dialog is up
        gate.set()
        await wait_for(pilot, lambda: on_screen(app, "echo from-the-tool"), what="the confirmation")
        for key in early:
            app.post_message(key)
        await pilot.press(*"y yourself", "y", "enter", "tab", "enter")  # at typing speed
        await pilot.pause()
        assert isinstance(app.screen, ToolConfirmDialog), "typing answered the confirmation"
        assert len(fake.requests) == 1 and "from-the-tool" not in json.dumps(fake.requests[0].body)
        assert IGNORED in screen_text(app)
        await pilot.pause(SETTLE)
        await pilot.press("enter")  # Enter alone: the refusing button has the focus
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the refusal")
        [result] = await results(app)
        assert "from-the-tool" not in result
        # what was typed before the dialog appeared went on to the composer, in order
        assert app.query_one(Composer).text == "just try it b"


async def test_after_a_pause_y_runs_and_an_early_click_does_not(make_app, fake):
    fake.script_openai(tool_calls=[bash_call("c1", "echo from-the-tool")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_screen(app, "echo from-the-tool"), what="the confirmation")
        # "early" however slow the machine is: the pause is made long while the click comes
        dialog = app.screen
        assert isinstance(dialog, ToolConfirmDialog)
        dialog.ARM_DELAY = 600.0
        await pilot.click("#yes")
        await pilot.pause()
        assert app.screen is dialog
        del dialog.ARM_DELAY  # the class's pause again
        await pilot.pause(SETTLE)
        await pilot.press("y")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the second turn")
        assert "from-the-tool" in (await results(app))[0]


async def test_a_click_after_the_pause_runs(make_app, fake):
    fake.script_openai(tool_calls=[bash_call("c1", "echo clicked")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolConfirmDialog), what="the confirmation")
        await pilot.pause(SETTLE)
        await pilot.click("#yes")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the second turn")
        assert "clicked" in (await results(app))[0]


async def test_allow_for_this_session_skips_the_next_identical_confirmation(make_app, fake):
    fake.script_openai(tool_calls=[bash_call("c1", "echo same")])
    fake.script_openai(tool_calls=[bash_call("c2", "echo same")])
    fake.script_openai(tool_calls=[bash_call("c3", "echo other")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_screen(app, "echo same"), what="the confirmation")
        assert "Allow for this session (a)" in screen_text(app)
        await pilot.pause(SETTLE)
        await pilot.press("a")
        # the same command again runs without asking; another command asks
        await wait_for(pilot, lambda: len(fake.requests) == 3 and on_screen(app, "echo other"),
                       what="the confirmation for another command")
        await pilot.pause(SETTLE)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(fake.requests) == 4 and idle(app), what="the last turn")
        same1, same2, other = await results(app)
        assert same1.strip() == same2.strip() == "same"
        assert "other" not in other


async def test_closing_while_asking_refuses_instead_of_waiting_forever(make_app, fake):
    # e.g. the terminal closes: the app exits with the question open, then the chat is closed
    fake.script_openai(tool_calls=[bash_call("c1", "echo never")])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_screen(app, "echo never"), what="the confirmation")
        app.exit()
        await wait_for(pilot, lambda: not app.is_running, what="the exit")
        await asyncio.wait_for(app.chat.close(), 5)
    assert len(fake.requests) == 1


async def test_the_command_is_shown_whole_with_its_control_characters_visible(make_app, fake):
    fake.script_openai(tool_calls=[bash_call("c1", "make all \x1b]52;c;QUFB\x07; echo \u202eexe.txt")])
    fake.script_openai(["done"])
    async with make_app(tools=["bash"]) as (app, pilot):
        await type_text(pilot, "run it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_screen(app, "make all"), what="the confirmation")
        text = screen_text(app)
        assert "make all ␛]52;c;QUFB␇; echo <U+202E>exe.txt" in text
        assert not any(c in text for c in "\x1b\x07\u202e")
        await pilot.pause(SETTLE)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the refusal")
