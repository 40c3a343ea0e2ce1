"""Sub-agents in the app (issue 39): a question asked inside a `task` call's child names the
sub-agent; the call's result says it is a sub-agent's work, in the transcript and in the tree, and
Enter (or o) on it opens the child's session, whose header says whose it is; Backspace in the tree
(or /back) at its start comes back to the caller's session where its leaf was."""

from __future__ import annotations

import asyncio
import json

from treechat.storage.model import MessageEntry, ToolResultMessage
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.transcript.view import Transcript
from treechat.widgets.tree.view import TreeView

from .conftest import idle, screen_text, type_text, wait_for
from .questions import answer, wait_asking


def task(call_id: str, description: str, prompt: str) -> dict[str, str]:
    return {"id": call_id, "name": "task", "arguments": json.dumps({"description": description, "prompt": prompt})}


def bash(call_id: str, command: str) -> dict[str, str]:
    return {"id": call_id, "name": "bash", "arguments": json.dumps({"command": command})}


async def task_done(app, pilot, fake) -> str:
    """A reply calls `task`; the child runs `bash` (asking first: yes) and answers; the reply
    ends. The task result's entry id."""
    fake.script_openai(tool_calls=[task("t1", "fix tests", "Run echo child.")])
    fake.script_openai(tool_calls=[bash("b1", "echo child")])  # the child asks before it runs
    fake.script_openai(["CHILD-ANSWER"])
    fake.script_openai(["PARENT-DONE"])
    await type_text(pilot, "ask a sub-agent")
    await pilot.press("enter")
    panel = await wait_asking(pilot, app, "echo child", what="the child's question")
    assert panel.spec.asker == "task 'fix tests'"
    assert "task 'fix tests' asks: Run this shell command?" in screen_text(app)
    await answer(pilot, app, "y")
    await wait_for(pilot, lambda: idle(app) and "PARENT-DONE" in screen_text(app), what="the reply's end")
    return next(e.id for e in await app.chat.session.get_branch()
                if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage))


def header(app) -> str:
    widget = app.query_one(SessionHeader)
    return f"{widget.session_name} {widget.position}"


async def test_a_childs_question_names_it_and_its_result_opens_its_session_from_the_tree(make_app, fake):
    async with make_app(tools=["bash", "task"]) as (app, pilot):
        result = await task_done(app, pilot, fake)
        parent, parent_leaf = app.chat.session_id, app.chat.leaf_id
        await pilot.pause()
        assert "sub-agent 'fix tests' (Enter or o opens its session) → CHILD-ANSWER" in screen_text(app)
        tree = app.query_one(TreeView)
        tree.focus()
        tree.move_cursor_to(result)
        await pilot.pause()
        assert tree.on_subagent and "Open sub-agent" in screen_text(app)  # the footer names the key
        row = next(line for line in screen_text(app).splitlines() if "tool: task: CHILD-ANSWER" in line)
        assert "⇲" in row
        tree._tips.hover(result)  # the pointer rests on it: what it is, and the task's description
        await wait_for(pilot, lambda: "task: fix tests" in str(tree.tooltip or ""), what="the details")
        assert "sub-agent's result (Enter or o opens its session)" in str(tree.tooltip)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.session_id != parent, what="the child's session")
        await wait_for(pilot, lambda: "CHILD-ANSWER" in screen_text(app) and "Run echo child." in screen_text(app),
                       what="the child's transcript")
        assert f"of session {parent[:8]}" in header(app) and "fix tests" in header(app)
        tree.focus()
        await pilot.press("backspace")  # at the child's start: back to the caller, where its leaf was
        await wait_for(pilot, lambda: app.chat.session_id == parent, what="back in the caller's session")
        assert app.chat.leaf_id == parent_leaf and "sub-agent's session" not in header(app)
        assert tree.running_rows == []


async def test_enter_on_the_result_in_the_transcript_opens_it_and_back_returns(make_app, fake):
    async with make_app(tools=["bash", "task"]) as (app, pilot):
        result = await task_done(app, pilot, fake)
        parent = app.chat.session_id
        transcript = app.query_one(Transcript)
        transcript.focus()
        await pilot.press("end")
        for _ in range(6):  # up from the last reply to the result
            if transcript.selected == result:
                break
            await pilot.press("up")
        assert transcript.selected == result
        await pilot.pause()
        assert "Open sub-agent" in screen_text(app).splitlines()[-1]  # the footer names its key
        await type_text(pilot, "half typed")
        transcript.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.session_id != parent, what="the child's session")
        assert "a sub-agent's session" in header(app)
        await type_text(pilot, "/back")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.session_id == parent, what="back in the caller's session")
        await wait_for(pilot, lambda: "half typed" in app.query_one("Composer").text, what="the draft back")


async def test_opening_a_sub_agent_while_another_branch_runs_says_what_to_stop_and_keeps_the_draft(make_app, fake):
    async with make_app(tools=["bash", "task"]) as (app, pilot):
        result = await task_done(app, pilot, fake)
        parent = app.chat.session_id
        gate = asyncio.Event()
        fake.script_openai(["still ", "going"], gate=gate, gate_after=1)
        await type_text(pilot, "another branch")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.chat.runs) == 1, what="a run")
        await app.chat.move_to(result)  # the person moves away: the run goes on on its branch
        await type_text(pilot, "my draft")
        await app.moves.open_child(result)
        await pilot.pause()
        assert app.chat.session_id == parent and app.query_one("Composer").text == "my draft"
        assert "1 reply is running on a branch of this session (the tree marks them)" in screen_text(app)
        gate.set()
        await wait_for(pilot, lambda: not app.chat.is_running, what="the run's end")
        await app.moves.open_child(result)  # now it opens, and the line that said why not goes
        await wait_for(pilot, lambda: app.chat.session_id != parent, what="the child's session")
        await pilot.pause()
        assert "is running on a branch" not in screen_text(app)
