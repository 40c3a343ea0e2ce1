"""Several runs in the app (issue 39): each running branch carries a live marker on its tip's row in
the tree panel (on the nearest shown row when a fold or the filter hides the tip), the status bar
counts the runs, Esc on one branch stops its run and its marker goes while the other runs on."""

from __future__ import annotations

import asyncio

from textual.notifications import Notify

from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.composer.view import Composer
from treechat.widgets.tree.drawing import SPINNER
from treechat.widgets.tree.view import TreeView

from .conftest import idle, screen_text, type_text, wait_for


def tree_line(app, text: str) -> str:
    """The tree row (its gutter and connectors on, from the screen) whose text is the prompt `text`."""
    found = [line for line in screen_text(app).splitlines() if f"user: {text}" in line]
    assert found, f"no tree row with {text!r}"
    at = found[0].index(f"user: {text}")
    return found[0][max(at - 8, 0):]  # (the transcript's part of the line left out)


def marked(line: str) -> bool:
    return any(frame in line for frame in SPINNER)


async def two_runs(app, pilot, fake, gates: tuple[asyncio.Event, asyncio.Event]) -> tuple[str, str, str]:
    """q → a, then "left" streaming under a, then (moved back to a) "right" streaming beside it:
    (a's id, left prompt's id, right prompt's id)."""
    fake.script_openai(["first answer"])
    fake.script_openai(["left ", "LEFT-DONE"], gate=gates[0], gate_after=1)
    fake.script_openai(["right ", "RIGHT-DONE"], gate=gates[1], gate_after=1)
    await type_text(pilot, "first prompt")
    await pilot.press("enter")
    await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 1, what="the first reply")
    first = app.chat.leaf_id
    await type_text(pilot, "left branch")
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(fake.requests) == 2 and len(app.chat.runs) == 1, what="the left run")
    left = app.chat.leaf_id
    await app.moves.choose(first)
    await wait_for(pilot, lambda: app.chat.leaf_id == first, what="the move back")
    await type_text(pilot, "right branch")
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(app.chat.runs) == 2 and len(fake.requests) == 3, what="the right run")
    right = app.chat.leaf_id
    return first, left, right


async def test_each_running_branch_is_marked_and_esc_stops_the_one_on_screen(make_app, fake):
    gates = (asyncio.Event(), asyncio.Event())
    notes: list[str] = []
    async with make_app(message_hook=lambda m: notes.append(m.notification.message) if isinstance(m, Notify) else None
                        ) as (app, pilot):
        tree = app.query_one(TreeView)
        _, left, right = await two_runs(app, pilot, fake, gates)
        await wait_for(pilot, lambda: set(tree.running_rows) == {left, right}, what="both markers")
        await pilot.pause()
        assert marked(tree_line(app, "left branch")) and marked(tree_line(app, "right branch"))
        assert not marked(tree_line(app, "first prompt"))
        assert app.query_one(StatusBar).runs == 2 and "2 runs" in screen_text(app)
        tree._tips.hover(right)  # the pointer rests on a running row: its tooltip says so
        assert "running" in str(tree.tooltip)
        tree.focus()
        await pilot.press("escape")  # on the right branch (the leaf): its run stops, the left goes on
        await wait_for(pilot, lambda: len(app.chat.runs) == 1, what="the right run to stop")
        await wait_for(pilot, lambda: tree.running_rows == [left], what="the right marker to go")
        assert "running" not in str(tree.tooltip)  # (the hovered row's tooltip follows)
        await pilot.pause()
        assert marked(tree_line(app, "left branch")) and not marked(tree_line(app, "right branch"))
        assert "1 run" in screen_text(app) and "2 runs" not in screen_text(app)
        await pilot.press("escape")  # nothing runs here now: Esc says where the run is, and stops nothing
        await wait_for(pilot, lambda: "No reply runs on this branch; 1 run on another branch" in " ".join(notes),
                       what="where the run is")
        await type_text(pilot, "a draft")
        await pilot.press("ctrl+c")  # not swallowed by the run elsewhere: the draft is cleared (↑ has it)
        await wait_for(pilot, lambda: app.query_one(Composer).text == "", what="the draft cleared")
        assert len(app.chat.runs) == 1 and tree.running_rows == [left]
        gates[0].set()
        await wait_for(pilot, lambda: not app.chat.is_running and tree.running_rows == [], what="the left run's end")
        await pilot.pause()
        assert not marked(tree_line(app, "left branch")) and "1 run" not in screen_text(app)
        assert tree._spin_timer is None  # nothing ticks once no run goes
        gates[1].set()


async def test_a_hidden_tip_marks_the_nearest_shown_row_and_new_rows_keep_the_marker(make_app, fake):
    gates = (asyncio.Event(), asyncio.Event())
    async with make_app() as (app, pilot):
        tree = app.query_one(TreeView)
        first, left, right = await two_runs(app, pilot, fake, gates)
        await wait_for(pilot, lambda: set(tree.running_rows) == {left, right}, what="both markers")
        tree.move_cursor_to(first)
        tree.action_fold()  # both prompts under a folded row: the fold carries one marker for both
        assert tree.running_rows == [first]
        tree.action_unfold()
        assert set(tree.running_rows) == {left, right}
        tree.set_query("first")  # the filter keeps only the first prompt: it carries the markers
        prompt = tree.cursor_id
        assert prompt is not None and tree.running_rows == [prompt]
        tree.set_query("")
        gates[0].set()  # the left run's reply joins the tree: it is done, its marker goes
        await wait_for(pilot, lambda: tree.running_rows == [right], what="the left run's end")
        assert app.chat.is_running
        gates[1].set()
        await wait_for(pilot, lambda: not app.chat.is_running and tree.running_rows == [], what="the right run's end")


async def test_the_marker_follows_the_runs_tip_as_it_appends_and_the_filter_hides_it(make_app, fake):
    gate = asyncio.Event()
    fake.script_openai(tool_calls=[{"id": "l1", "name": "ls", "arguments": "{}"}])
    fake.script_openai(["LISTED"], gate=gate, gate_after=0)  # the request after the tool's result waits
    async with make_app(tools=["ls"]) as (app, pilot):
        tree = app.query_one(TreeView)
        await type_text(pilot, "list the folder")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and len(app.chat.runs) == 1, what="the second request")
        tip = app.chat.runs[0].tip
        row = tree.layout_data.rows[tip]
        assert row.role == "toolResult"  # the run's tip moved on as it appended: the call, then its result
        await wait_for(pilot, lambda: tree.running_rows == [tip], what="the marker on the tool's result")
        tree.set_filter("user-only")  # the result is hidden: the prompt above it carries the marker
        prompt = tree.running_rows[0]
        assert prompt != tip and tree.layout_data.rows[prompt].role == "user"
        tree.set_filter("default")
        assert tree.running_rows == [tip]
        gate.set()
        await wait_for(pilot, lambda: idle(app) and tree.running_rows == [], what="the run's end")
