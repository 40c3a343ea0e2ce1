"""Text you can take out and answers you can ask again (issue 10): /copy, /retry, $EDITOR, /system."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager

from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import TextDialog

from .conftest import idle, path_texts, screen_text, type_text, wait_for


async def send(pilot, app, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: idle(app) and not app.chat.is_busy, what=f"the reply to {text!r}")
    await pilot.pause()


async def test_copy_puts_the_last_reply_or_the_nth_message_on_the_clipboard(make_app, fake, monkeypatch):
    monkeypatch.setenv("SSH_TTY", "/dev/pts/0")  # no platform clipboard command in a test
    fake.script_openai(["the ", "answer"])
    async with make_app() as (app, pilot):
        await send(pilot, app, "the question")
        await type_text(pilot, "/copy")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.clipboard == "the answer", what="the reply on the clipboard")
        await type_text(pilot, "/copy 2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.clipboard == "the question", what="the prompt on the clipboard")
        await type_text(pilot, "/copy 9")
        await pilot.press("enter")
        await pilot.pause()
        assert "/copy N takes 1 to 2" in str(app.query_one("#banner").render())


async def test_retry_asks_again_and_keeps_both_replies_as_siblings(make_app, fake):
    fake.script_openai(["first try"])
    fake.script_openai(["second try"])
    async with make_app() as (app, pilot):
        await send(pilot, app, "a question")
        await type_text(pilot, "/retry")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 2 and idle(app), what="the second reply")
        await pilot.pause()
        assert await path_texts(app) == [("user", "a question"), ("assistant", "second try")]
        prompt = (await app.chat.session.get_branch())[-2]
        replies = [e for e in await app.chat.session.get_children(prompt.id) if e.type == "message"]
        assert len(replies) == 2
        assert "2/2" in screen_text(app)
        assert len(fake.requests[1].body["messages"]) == len(fake.requests[0].body["messages"])


async def test_ctrl_g_edits_the_composer_text_in_the_editor(make_app, fake, tmp_path, monkeypatch):
    script = tmp_path / "editor.py"
    script.write_text("import sys\nopen(sys.argv[1], 'a').write('an added line\\n')\n")  # as `echo … >> FILE`
    monkeypatch.setenv("VISUAL", f"{sys.executable} {script}")
    async with make_app() as (app, pilot):
        steps: list[str] = []

        @contextmanager
        def suspend():  # as Textual's: the app resumes only when the block ends without an error
            steps.append("suspended")
            yield
            steps.append("resumed")

        monkeypatch.setattr(app, "suspend", suspend)
        await type_text(pilot, "a long prompt")
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: app.ui(Composer).text == "a long prompt\nan added line", what="the edited text")
        for failing in (f"{sys.executable} -c 'import sys; sys.exit(3)'", str(tmp_path / "no-such-editor")):
            monkeypatch.setenv("VISUAL", failing)
            steps.clear()
            await pilot.press("ctrl+g")
            await wait_for(pilot, lambda: steps == ["suspended", "resumed"], what="the app back after the failure")
            banner = str(app.query_one("#banner").render())
            assert "exited with status 3" in banner or "Could not start the editor" in banner
            assert app.ui(Composer).text == "a long prompt\nan added line"


async def test_system_adds_instructions_and_shows_the_whole_prompt(make_app, fake):
    fake.script_openai(["ok"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "/system Always answer in French.")
        await pilot.press("enter")
        await pilot.pause()
        await send(pilot, app, "hello")
        system = json.dumps(fake.requests[0].body["messages"][0])
        assert "Always answer in French." in system and "treechat" in system
        await type_text(pilot, "/system")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="the prompt dialog")
        assert "Always answer in French." in app.screen.text


async def test_tab_completes_a_path_after_at_and_a_pasted_image_path_becomes_an_attachment(make_app, fake, tmp_path):
    from textual import events

    from tests.images import png_bytes, write

    (tmp_path / "notes.txt").write_text("the milk is in the fridge\n")
    (tmp_path / "notebook").mkdir()
    write(tmp_path / "shot.png", png_bytes(3, 2))
    fake.script_openai(["seen"])
    # (a model that takes images: an id the catalog does not know, on a server named by its URL, is text-only)
    async with make_app(model="openai/gpt-4.1-mini") as (app, pilot):
        composer = app.ui(Composer)
        await type_text(pilot, "read @no")
        await pilot.press("tab")
        assert composer.text == "read @note"  # the common part of notes.txt and notebook/
        assert "notes.txt" in composer.border_subtitle and "notebook/" in composer.border_subtitle
        await pilot.press("s", "tab")
        assert composer.text == "read @notes.txt "
        composer.post_message(events.Paste(f"'{tmp_path / 'shot.png'}'"))
        await pilot.pause()
        assert composer.text.endswith("@" + str(tmp_path / "shot.png"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(fake.requests) == 1 and idle(app), what="the reply")
        sent = json.dumps(fake.requests[0].body["messages"][-1])
        assert "the milk is in the fridge" in sent and "data:image/png;base64," in sent
        await pilot.pause()
        shown = screen_text(app)  # chips, not the file's text
        assert "📄 notes.txt · 1 line" in shown and "🖼 PNG" in shown and "3×2" in shown
        assert "the milk is in the fridge" not in shown
