"""Issue 21 item 10: a huge paste and a huge search query keep the app responsive. A 20 MB paste
took 72 s at 100% CPU (and every paste went into the composer twice); a 100 KB search query took
14 s in the app and 94 s in `treechat search`. A paste over `max_input_mb` is now refused with a
notice naming the setting, and a query is cut at MAX_QUERY_CHARS with a note (bench/hostile_input.py
has the figures)."""

from __future__ import annotations

from textual import events

from tests.tui.conftest import fake, make_app, wait_for  # noqa: F401  (fixtures)
from treechat.cli.main import main
from treechat.storage.base import MAX_QUERY_CHARS
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import SearchScreen
from treechat.widgets.textual_internals import notifications


async def paste(app, pilot, text: str) -> None:
    app.post_message(events.Paste(text))  # as the terminal driver posts a bracketed paste
    await pilot.pause()
    await pilot.pause()


async def test_a_paste_goes_in_once(make_app):  # noqa: F811
    async with make_app() as (app, pilot):
        composer = app.query_one(Composer)
        composer.focus()
        await paste(app, pilot, "pasted text")
        assert composer.text == "pasted text"


async def test_a_paste_over_max_input_mb_is_refused_with_a_notice(make_app, tmp_path):  # noqa: F811
    (tmp_path / "config.toml").write_text("max_input_mb = 0.01\n")  # 10 KB, so the test stays quick
    async with make_app() as (app, pilot):
        composer = app.query_one(Composer)
        composer.focus()
        await paste(app, pilot, "a line of a long log\n" * 1000)  # 21 KB
        assert composer.text == ""
        notes = [n.message for n in notifications(app)]
        assert notes and notes[-1] == ("The paste is 21 KB; the composer takes up to 10 KB at once (max_input_mb in "
                                       "config.toml). Save it to a file and attach it with @path.")
        await paste(app, pilot, "a line of a short log\n" * 100)  # 2 KB: fits
        assert composer.text.count("short log") == 100


async def test_a_huge_query_is_cut_and_the_screen_says_so(make_app):  # noqa: F811
    async with make_app() as (app, pilot):
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen), what="the search screen")
        await paste(app, pilot, "needle " * 10_000)  # 70 KB
        box = app.screen.query_one("#query")
        assert len(box.value) == MAX_QUERY_CHARS
        count = app.screen.query_one("#count")
        await wait_for(pilot, lambda: "hits" in str(count.render()), what="the results")
        assert f"only the first {MAX_QUERY_CHARS:,} characters are searched" in str(count.render())


def test_the_cli_cuts_a_huge_query_with_a_note(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "search", "needle " * 10_000]) == 0
    out, err = capsys.readouterr()
    assert err == f"treechat: only the first {MAX_QUERY_CHARS:,} characters of the query are searched\n"
    assert out.startswith("No matches for 'needle needle") and len(out) < 200


async def test_a_huge_reply_is_drawn_in_part_and_says_so(make_app, fake, monkeypatch):  # noqa: F811
    """A 1 MB reply in paragraphs took 32 s and 566 MB to draw; the transcript now draws the first
    SHOWN_CHARS characters of a message and says how long it is (the session keeps all of it)."""
    import treechat.widgets.transcript.long_text as long_text
    from tests.tui.conftest import path_texts, screen_text, type_text

    monkeypatch.setattr(long_text, "SHOWN_CHARS", 2_000)  # (the same code path, 50 times faster)
    fake.script_openai([f"paragraph {i} of a long reply\n\n" for i in range(400)])  # ~12,000 characters
    async with make_app() as (app, pilot):
        await type_text(pilot, "write a lot")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.chat.is_running and len(app.query(".cut-note")) == 1,
                       what="the reply and its note", rounds=1500)
        note = str(app.query_one(".cut-note").render())
        assert note.endswith("characters in all: the first 2,000 are shown here (y copies all of it, /export writes it)")
        assert "paragraph 399" not in screen_text(app)
        [(_, _), (role, text)] = await path_texts(app)
        assert role == "assistant" and "paragraph 399 of a long reply" in text  # all of it is kept
