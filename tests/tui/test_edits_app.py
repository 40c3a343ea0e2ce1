"""edit and write in the app: each change is shown as a diff in a dialog typing cannot answer, the
transcript shows `notes.txt +1 −1` (Ctrl+O or Enter opens the diff), and moving the leaf offers to
restore the files (default No); `/restore --undo` brings back what a restore replaced."""

from __future__ import annotations

import json

import pytest
from textual import events

from treechat.storage.model import MessageEntry, UserMessage
from treechat.widgets.question import gate as question_gate
from treechat.widgets.transcript.message_view import DiffLine
from treechat.widgets.transcript.view import Transcript

from .conftest import idle, screen_text, type_text, wait_for
from .questions import answer as answer_with
from .questions import asking as asked

ARM = 0.2  # a question's moment on screen, shorter here (the gate itself is tested with the real one)


@pytest.fixture(autouse=True)
def quick_guard(monkeypatch):
    monkeypatch.setattr(question_gate, "ARM_DELAY", ARM)


def call(call_id: str, name: str, **args) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


def asking(app, words: str) -> bool:
    return asked(app, words) is not None


async def answer(pilot, key: str) -> None:
    await answer_with(pilot, pilot.app, key)


async def test_edits_are_approved_from_their_diff_shown_folded_and_restored_with_the_leaf(make_app, fake, tmp_path):
    notes = tmp_path / "notes.txt"
    fake.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="one\ntwo\n")])
    fake.script_openai(tool_calls=[call("c2", "edit", path="notes.txt", edits=[{"oldText": "two", "newText": "TWO"}])])
    fake.script_openai(tool_calls=[call("c3", "edit", path="notes.txt", edits=[{"oldText": "one", "newText": "1"}])])
    fake.script_openai(["done"])
    async with make_app(tools=["edit", "write"]) as (app, pilot):
        await type_text(pilot, "make notes")
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "Create notes.txt (+2 −0)?"), what="the write's dialog")
        panel = app.questions.panel
        early = events.Key("y", "y")  # a key typed as it appeared (stamped so, whatever the load): not an answer
        early.time = panel.gate.armed_from - ARM * 0.8
        app.post_message(early)
        await pilot.pause()
        assert not panel.answered and not notes.exists() and app.composer.text == "y"
        app.composer.load_text("")
        await pilot.press("escape")  # they had typed: to the question first
        await answer(pilot, "y")
        await wait_for(pilot, lambda: asking(app, "Apply this edit to notes.txt (+1 −1)?"), what="the edit's dialog")
        text = screen_text(app)
        assert "-two" in text and "+TWO" in text and "Allow edits for this session (a)" in text
        await answer(pilot, "a")  # this one, and the next edits of the session without asking
        await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 4, what="the run")
        assert notes.read_text() == "1\nTWO\n"
        # the transcript: a summary line per change, the diff folded until asked
        lines = [line.summary for line in app.query(DiffLine)]
        assert lines == ["✓ write notes.txt +2 −0", "✓ edit notes.txt +1 −1", "✓ edit notes.txt +1 −1"]
        assert "+TWO" not in screen_text(app)
        # Enter on a selected edit opens its diff; Ctrl+O opens every tool's
        transcript = app.query_one(Transcript)
        edit_view = next(v for v in transcript.query("MessageView") if v.query(DiffLine) and
                         "edit notes.txt" in v.query_one(DiffLine).summary)
        transcript.focus()
        for _ in range(12):  # ↑ from the last message to the edit's result
            if transcript.selected == edit_view.entry_id:
                break
            await pilot.press("up")
        assert transcript.selected == edit_view.entry_id
        await pilot.press("enter")
        await pilot.pause()
        assert edit_view.query_one(DiffLine).expanded and "+TWO" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert all(line.expanded for line in app.query(DiffLine))

        # back to before the prompt: the file did not exist there; restoring is offered, default No
        prompt = next(e for e in await app.chat.session.get_branch()
                      if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage))
        await app.moves.choose(prompt.id)
        await wait_for(pilot, lambda: asking(app, "Restore 1 file to this point?"), what="the restore offer")
        assert "-1" in screen_text(app) and "Keep the files (n)" in screen_text(app)
        assert app.composer.text == "make notes"  # the prompt, to edit and resend: not typing
        await answer(pilot, "enter")  # Enter alone keeps the files
        await wait_for(pilot, lambda: app.questions.panel is None, what="the refusal")
        assert notes.read_text() == "1\nTWO\n"
        await type_text(pilot, "")
        app.composer.set_text("")
        assert await app.run_slash("restore", "")
        await wait_for(pilot, lambda: asking(app, "Restore 1 file to this point?"), what="/restore")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not notes.exists(), what="the file removed")
        # Backspace in the tree (/back): the leaf returns, and so can the file
        app.questions.handed_over()
        await app.chat.back()
        await wait_for(pilot, lambda: asking(app, "Restore 1 file to this point?"), what="the offer at the leaf")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: notes.exists(), what="the file back")
        assert notes.read_text() == "1\nTWO\n"


async def test_a_changed_file_is_kept_unless_forced_and_the_undo_brings_it_back(make_app, fake, tmp_path):
    notes = tmp_path / "notes.txt"
    fake.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="mine soon\n")])
    fake.script_openai(["done"])
    async with make_app(tools=["write"]) as (app, pilot):
        await type_text(pilot, "write it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "Create notes.txt"), what="the dialog")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 2, what="the run")
        notes.write_text("edited by me\n")  # an editor, git, another program
        prompt = next(e for e in await app.chat.session.get_branch()
                      if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage))
        await app.chat.move_to(prompt.parent_id)
        await pilot.pause(0.2)
        assert app.questions.panel is None  # nothing to offer: it changed on disk
        assert await app.run_slash("restore", "")
        await pilot.pause(0.2)
        assert notes.read_text() == "edited by me\n"
        assert await app.run_slash("restore", "--force")
        await wait_for(pilot, lambda: asking(app, "Restore 1 file"), what="the forced restore")
        assert "Overwrites notes.txt" in screen_text(app)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not notes.exists(), what="the forced restore done")
        assert await app.run_slash("restore", "--undo")
        await wait_for(pilot, lambda: notes.exists(), what="the undo")
        assert notes.read_text() == "edited by me\n"


async def test_a_write_outside_the_folder_is_asked_each_time_even_when_edits_are_allowed(make_app, fake, tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    fake.script_openai(tool_calls=[call("c1", "write", path="in.txt", content="a\n")])
    fake.script_openai(tool_calls=[call("c2", "write", path=str(outside), content="b\n")])
    fake.script_openai(["done"])
    try:
        async with make_app(tools=["write"]) as (app, pilot):
            await type_text(pilot, "go")
            await pilot.press("enter")
            await wait_for(pilot, lambda: asking(app, "Create in.txt"), what="the first dialog")
            await answer(pilot, "a")
            await wait_for(pilot, lambda: asking(app, "OUTSIDE the working folder"), what="the outside dialog")
            assert "Allow edits for this session" not in screen_text(app)
            panel = app.questions.panel
            await answer(pilot, "a")  # not offered here: no answer (typing)
            await pilot.pause()
            assert not panel.answered and panel.gate.state == "typing"
            await pilot.press("escape")
            await answer(pilot, "n")
            await wait_for(pilot, lambda: idle(app) and len(fake.requests) == 3, what="the run")
            assert (tmp_path / "in.txt").read_text() == "a\n" and not outside.exists()
            assert isinstance(app.query_one(Transcript), Transcript)
    finally:
        outside.unlink(missing_ok=True)
