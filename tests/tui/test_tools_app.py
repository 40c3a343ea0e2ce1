"""Tools on by default in the app (issue 37): the welcome names them and how to change them, the
status bar counts them (at 80 columns too), `/tools` opens the list (Space / Enter toggle, closing
keeps the choice), `/tools NAME on|off` with Tab, and the next request carries what was chosen,
kept after the session is reopened."""

from __future__ import annotations

from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.chrome.welcome import Welcome
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import ToolsDialog

from .conftest import idle, screen_text, type_text, wait_for

ALL = ["read", "ls", "grep", "bash", "edit", "write", "task"]


def welcome_text(app) -> str:
    return app.query_one(Welcome).render().plain


def status_line(app) -> str:
    return app.query_one(StatusBar).render().plain


def sent_tools(fake, index: int = -1) -> list[str]:
    return [t["function"]["name"] for t in fake.requests[index].body.get("tools", [])]


async def say(pilot, app, fake, text: str) -> None:
    fake.script_openai(["ok"])
    count = len(fake.requests)
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(fake.requests) > count and idle(app), what="the reply", rounds=1000)


async def command(pilot, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await pilot.pause()


async def test_a_fresh_home_has_seven_tools_the_welcome_and_the_status_say_so(make_app, fake) -> None:
    async with make_app(config_tools=True, size=(80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: "Tools on" in welcome_text(app), what="the tools on the welcome")
        text = welcome_text(app)
        assert "Tools on: read, ls, grep, bash, edit, write, task; commands and edits ask first." in text
        assert "/tools to change them · tools = [] in config.toml turns them off" in text
        assert status_line(app).endswith("7 tools")
        assert "7 tools" in screen_text(app)  # the bar fits itself at 80 columns: the count stays on screen
        await say(pilot, app, fake, "fix the failing test")
        assert sent_tools(fake) == ALL


async def test_tools_empty_in_config_means_none_and_the_welcome_says_so(make_app, fake, tmp_path) -> None:
    (tmp_path / "config.toml").write_text("tools = []\n")
    async with make_app(config_tools=True, size=(80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: "No tools" in welcome_text(app), what="no tools on the welcome")
        assert "the model cannot look at files or run commands. /tools turns them on" in welcome_text(app)
        assert status_line(app).endswith("no tools")
        await say(pilot, app, fake, "hi")
        assert "tools" not in fake.requests[-1].body


async def test_tools_bash_off_reaches_the_next_request_and_stays_after_reopening(make_app, fake) -> None:
    async with make_app(config_tools=True) as (app, pilot):
        await command(pilot, "/tools bash off")
        await wait_for(pilot, lambda: status_line(app).endswith("6 tools"), what="the count")
        await say(pilot, app, fake, "hi")
        assert sent_tools(fake) == ["read", "ls", "grep", "edit", "write", "task"]
        session_id = app.chat.session_id
    async with make_app(config_tools=True, session_id=session_id) as (app, pilot):
        await wait_for(pilot, lambda: status_line(app).endswith("6 tools"), what="the count after reopening")
        await say(pilot, app, fake, "again")
        assert sent_tools(fake) == ["read", "ls", "grep", "edit", "write", "task"]
        await command(pilot, "/tools bash on")
        await wait_for(pilot, lambda: status_line(app).endswith("7 tools"), what="bash back on")
        await say(pilot, app, fake, "and now")
        assert sent_tools(fake) == ALL


async def test_the_dialog_lists_every_tool_and_closing_keeps_the_choice(make_app, fake) -> None:
    async with make_app(config_tools=True) as (app, pilot):
        await command(pilot, "/tools")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolsDialog), what="the dialog")
        text = screen_text(app)
        for name in ALL:
            assert f"● on   {name}" in text
        await pilot.press("down", "down", "down", "space")  # bash, with Space
        await pilot.press("down", "down", "enter")  # write, with Enter
        assert "○ off  bash" in screen_text(app) and "○ off  write" in screen_text(app)
        assert app.chat.status().tools == tuple(ALL)  # nothing changes until the dialog closes
        await pilot.press("escape")
        await wait_for(pilot, lambda: status_line(app).endswith("5 tools"), what="the choice kept")
        assert not isinstance(app.screen, ToolsDialog)
        await say(pilot, app, fake, "hi")
        assert sent_tools(fake) == ["read", "ls", "grep", "edit", "task"]
        await command(pilot, "/tools")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolsDialog), what="the dialog again")
        assert "○ off  bash" in screen_text(app)
        await pilot.press("escape")  # nothing changed: nothing written
        await wait_for(pilot, lambda: not isinstance(app.screen, ToolsDialog), what="closed")


async def test_tab_completes_a_tool_and_the_word_that_changes_it(make_app) -> None:
    async with make_app(config_tools=True) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded, what="Tab completion of commands")
        await type_text(pilot, "/tools ba")
        await pilot.press("tab")
        assert app.query_one(Composer).text == "/tools bash off "
        await pilot.press("enter")
        await wait_for(pilot, lambda: status_line(app).endswith("6 tools"), what="bash off")
        await command(pilot, "/tools bash maybe")
        await wait_for(pilot, lambda: "Which tool, on or off?" in screen_text(app), what="the one line")
