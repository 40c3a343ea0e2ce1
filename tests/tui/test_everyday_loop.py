"""The everyday loop of a Pi or Claude Code user (issue 37): Ctrl+C stops, clears (keeping the
draft) and quits on a second press; a draft replaced by a tree move is never lost; moving in the
tree while a reply streams shows that reply only on its own branch, and a message sent then says
where it goes."""

from __future__ import annotations

import asyncio
import re

from textual.notifications import Notify

from treechat.storage.model import MessageEntry, UserMessage
from treechat.widgets.composer.view import Composer

from .conftest import idle, path_texts, screen_text, type_text, wait_for


def waited(app) -> float:
    found = re.search(r"waiting for the reply · (\d+\.\d) s", screen_text(app))
    return float(found.group(1)) if found else 0.0


def toasts(sink: list[str]):
    def hook(message: object) -> None:
        if isinstance(message, Notify):
            sink.append(message.notification.message)
    return hook


async def test_ctrl_c_stops_a_running_reply(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["partial ", "never"], gate=gate, gate_after=1)
    async with make_app() as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.is_running and len(fake.requests) == 1, what="the run")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.chat.is_running, what="the stop")
        roles = [role for role, _ in await path_texts(app)]
        assert roles[0] == "user" and app.is_running  # stopped, not quit


async def test_ctrl_c_clears_the_draft_into_history_then_says_how_to_quit_then_quits(make_app, fake):
    notes: list[str] = []
    async with make_app(message_hook=toasts(notes)) as (app, pilot):
        composer = app.query_one(Composer)
        await type_text(pilot, "a draft I want back")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert composer.text == "" and app.is_running
        assert "Draft cleared (↑ brings it back)." in notes
        await pilot.press("up")
        assert composer.text == "a draft I want back"
        await pilot.press("ctrl+c")  # clears again
        await pilot.press("ctrl+c")  # idle and empty: says how, once
        await pilot.pause()
        assert notes[-1] == "Press Ctrl+C again to quit (Ctrl+Q quits too)." and "[b]" not in notes[-1]
        await pilot.press("x", "backspace")  # another key: the next Ctrl+C says it again
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running, what="the quit")


async def test_a_draft_replaced_by_a_tree_move_is_kept_and_comes_back(make_app, fake):
    fake.script_openai(["first answer"])
    async with make_app() as (app, pilot):
        composer = app.query_one(Composer)
        await type_text(pilot, "first prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 1, what="the reply")
        leaf = app.chat.leaf_id
        await type_text(pilot, "my unsent draft")
        prompt = next(e for e in await app.chat.session.get_branch()
                      if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage))
        await app.moves.choose(prompt.id)  # Enter on the earlier prompt in the tree: edit and resend
        await wait_for(pilot, lambda: composer.text == "first prompt", what="the prompt to edit")
        assert "my unsent draft" in composer.sent_history  # ↑ has it
        await app.chat.move_to(leaf)  # back where it was typed: it comes back
        await wait_for(pilot, lambda: composer.text == "my unsent draft", what="the draft back")


async def test_a_reply_streams_only_on_its_branch_and_a_send_elsewhere_starts_another_run(make_app, fake):
    """Issue 39: a move while a run goes is a real move; Enter there starts a second run; choosing the
    running branch's tip joins it again, its reply there as far as it came."""
    fake.script_openai(["first answer"])
    gate = asyncio.Event()
    fake.script_openai(["streaming ", "SECOND-REPLY ", "tail"], gate=gate, gate_after=2)
    fake.script_openai(["THIRD-REPLY"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "first prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 1, what="the first reply")
        first_leaf = app.chat.leaf_id
        await type_text(pilot, "second prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "SECOND-REPLY" in screen_text(app), what="the reply streaming")
        running_tip = app.chat.leaf_id
        await app.moves.choose(first_leaf)  # while it runs: a real move, not a preview
        await wait_for(pilot, lambda: app.chat.leaf_id == first_leaf and "SECOND-REPLY" not in screen_text(app),
                       what="the move")
        assert app.chat.preview_id is None and "first answer" in screen_text(app)
        assert not app.query_one(Composer).running  # Enter here sends: nothing runs on this branch
        await type_text(pilot, "a draft")
        await pilot.press("ctrl+c")  # nothing runs here: Ctrl+C clears the draft, the other run goes on
        await wait_for(pilot, lambda: app.query_one(Composer).text == "", what="the draft cleared")
        assert app.chat.is_running and [t.tip for t in app.chat.runs] == [running_tip]
        await type_text(pilot, "third prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "THIRD-REPLY" in screen_text(app) and len(fake.requests) == 3,
                       what="a second run's reply")
        assert app.chat.is_running and [t.tip for t in app.chat.runs] == [running_tip]  # the first still runs
        assert "SECOND-REPLY" not in screen_text(app)
        await app.moves.choose(running_tip)  # its tip in the tree: back at its live end
        await wait_for(pilot, lambda: "SECOND-REPLY" in screen_text(app), what="the reply back on its branch")
        assert app.query_one(Composer).running
        gate.set()
        await wait_for(pilot, lambda: idle(app) and "tail" in screen_text(app), what="the first run's end")


async def test_quitting_while_two_branches_run_says_both_stop(make_app, fake):
    from treechat.widgets.screens import ConfirmDialog

    gate = asyncio.Event()
    fake.script_openai(["first answer"])
    fake.script_openai(["one ", "never"], gate=gate, gate_after=1)
    fake.script_openai(["two ", "never"], gate=gate, gate_after=1)
    async with make_app() as (app, pilot):
        await type_text(pilot, "first prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 1, what="the first reply")
        first_leaf = app.chat.leaf_id
        for prompt in ("second prompt", "third prompt"):
            await type_text(pilot, prompt)
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.chat.is_running_here, what="a run here")
            await app.moves.choose(first_leaf)
            await wait_for(pilot, lambda: not app.chat.is_running_here, what="the move")
        assert len(app.chat.runs) == 2
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        assert "Stop the 2 running replies and quit?" in screen_text(app)
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmDialog), what="staying")
        assert len(app.chat.runs) == 2
        gate.set()


async def test_a_request_shows_at_once_with_the_time_it_has_waited(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(["the answer"], gate=gate, gate_after=0)  # not a byte until the gate opens
    async with make_app() as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "waiting for the reply" in screen_text(app), what="the pending row")
        await wait_for(pilot, lambda: waited(app) >= 0.3, what="the time counted")
        gate.set()
        await wait_for(pilot, lambda: idle(app) and "the answer" in screen_text(app), what="the reply")
        assert "waiting for the reply" not in screen_text(app)


async def test_the_tree_panel_is_resized_with_keys_and_its_edge_and_remembered(make_app, fake, tmp_path):
    from treechat.config.state import StateFile
    from treechat.widgets.tree.view import TreeView

    async with make_app(size=(160, 40)) as (app, pilot):
        tree = app.query_one(TreeView)
        assert tree.outer_size.width == 44
        tree.focus()
        await pilot.press("less_than_sign", "less_than_sign")  # `<`: the left edge moves left
        await wait_for(pilot, lambda: tree.outer_size.width == 52, what="a wider panel")
        await pilot.press("greater_than_sign")
        await wait_for(pilot, lambda: tree.outer_size.width == 48, what="a narrower panel")
        left = tree.region.x
        await pilot.mouse_down(tree, offset=(0, 5))  # the border: a handle
        await pilot.hover(app.screen, offset=(left - 20, 5))
        await pilot.mouse_up(app.screen, offset=(left - 20, 5))
        await wait_for(pilot, lambda: tree.outer_size.width == 68, what="the dragged width")
        await pilot.mouse_down(tree, offset=(0, 5))
        await pilot.mouse_up(app.screen, offset=(5, 5))  # past where the conversation keeps its room
        await wait_for(pilot, lambda: tree.outer_size.width == 160 - app.panel.MIN_CHAT, what="the widest it goes")
        await wait_for(pilot, lambda: StateFile(tmp_path).read().get("tree_width") == 120, what="kept")
    async with make_app(size=(160, 40)) as (app, pilot):
        tree = app.query_one(TreeView)
        await wait_for(pilot, lambda: tree.outer_size.width == 120, what="the width from last time")
    async with make_app(size=(80, 24)) as (app, pilot):  # narrow: the drawer keeps its own width
        await pilot.press("f2")
        tree = app.query_one(TreeView)
        await wait_for(pilot, lambda: tree.display and 0 < tree.outer_size.width <= 72, what="the drawer")


async def test_an_error_line_goes_when_the_next_message_or_command_is_sent(make_app, fake):
    from treechat.widgets.chrome.banner import Banner

    gate = asyncio.Event()
    fake.script_openai(["fine now"], gate=gate, gate_after=0)
    async with make_app() as (app, pilot):
        banner = app.query_one("#banner", Banner)
        for command in ("/restore a b", "/restore c d"):
            await type_text(pilot, command)
            await pilot.press("enter")
            await wait_for(pilot, lambda: banner.display and banner.severity == "error", what="the command's error")
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not banner.display, what="the old error gone as the message goes")
        gate.set()
        await wait_for(pilot, lambda: idle(app) and "fine now" in screen_text(app), what="the reply")
