"""A paste is text, whatever it carries (issue 36): a terminal that does not filter a pasted
"end of paste" sequence hands the rest of the clipboard over as keys — a Ctrl+G in it opened
$EDITOR, an Enter would send — and C1 controls or bidi overrides in it were drawn raw in the
composer. And a paste is never lost: it lands in the composer whatever had the focus (issue 37)."""

from __future__ import annotations

from textual import events

from tests.tui.conftest import fake, make_app, type_text, wait_for  # noqa: F401  (fixtures)


def stamped(event: events.Key | events.Paste, at: float) -> events.Key | events.Paste:
    event.time = at
    return event


async def test_keys_in_the_same_burst_as_a_paste_are_text_not_commands(make_app, monkeypatch, tmp_path):  # noqa: F811
    ran = tmp_path / "editor-ran"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\necho ran >> {ran}\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    async with make_app() as (app, pilot):
        paste = events.Paste("hello ")
        at = paste.time
        burst = [stamped(paste, at), stamped(events.Key("ctrl+g", "\x07"), at + 0.001),
                 *(stamped(events.Key(c, c), at + 0.002) for c in "world"),
                 stamped(events.Key("enter", "\r"), at + 0.003), stamped(events.Key("x", "x"), at + 0.004)]
        for event in burst:
            app.post_message(event)
        await wait_for(pilot, lambda: app.composer.text.endswith("x"), what="the paste")
        await pilot.pause(0.2)
        assert app.composer.text == "hello ␇world\nx"
        assert not ran.exists()  # no editor
        assert len(await app.chat.session.get_branch()) == 0
        # a key typed by a person after the paste is a key again
        key = events.Key("ctrl+j", "\n")
        app.post_message(stamped(key, at + 1.0))
        await pilot.pause()
        assert app.composer.text == "hello ␇world\nx\n"


async def test_controls_in_a_paste_go_in_as_their_pictures(make_app):  # noqa: F811
    async with make_app() as (app, pilot):
        app.composer.focus()
        app.post_message(events.Paste("a\x1b]52;c;QQ==\x07b \x9b2J \u202eevil"))
        await wait_for(pilot, lambda: "evil" in app.composer.text, what="the paste")
        assert app.composer.text == "a␛]52;c;QQ==␇b <U+009B>2J <U+202E>evil"


async def test_a_paste_lands_in_the_composer_whatever_has_the_focus(make_app, fake):  # noqa: F811
    fake.script_openai(["a reply"])
    async with make_app() as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.chat.is_running and app.chat.agent is not None, what="the reply")
        for target in (app.transcript, app.tree_view):
            target.focus()
            await pilot.pause()
            app.post_message(events.Paste("pasted "))
            await pilot.pause()
            assert app.composer.has_focus
        assert app.composer.text == "pasted pasted "
