"""Themes through the real App: the configured one at start-up, an unknown one is one warning,
a theme picked in the palette is saved to config.toml (the rest of the file untouched), and code
blocks in the transcript follow light and dark."""

from __future__ import annotations

from textual.command import CommandPalette
from textual.widgets import Input

from treechat.widgets.textual_internals import notifications
from treechat.widgets.transcript.markdown_body import MarkdownBody

from .conftest import wait_for

CONFIG = '''# mine
model = "openai/fake-model"  # the test server

[providers.box]
base_url = "http://127.0.0.1:9/v1"
api_key = "sk-stays-here"
models = ["m"]
'''


async def pick_theme(app, pilot, name: str) -> None:
    """Ctrl+P → "theme" → the theme list → `name`, as a person does it."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*"theme")
    await pilot.pause(0.3)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette)
                   and "theme" in str(app.screen.query_one("Input", Input).placeholder).lower(),
                   what="the theme list")
    await pilot.press(*name)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.theme == name, what=f"the theme {name}")


async def test_the_configured_theme_applies_at_start(make_app, tmp_path):
    (tmp_path / "config.toml").write_text('theme = "nord"\n', "utf-8")
    async with make_app() as (app, pilot):
        assert app.theme == "nord"
        await pilot.pause()
        assert (tmp_path / "config.toml").read_text("utf-8") == 'theme = "nord"\n'  # nothing rewritten


async def test_an_unknown_theme_is_one_warning_not_a_crash(make_app, tmp_path):
    (tmp_path / "config.toml").write_text('theme = "no-such-theme"\n', "utf-8")
    async with make_app() as (app, pilot):
        await pilot.pause()
        warnings = [n for n in notifications(app) if "no-such-theme" in n.message]
        assert len(warnings) == 1 and warnings[0].severity == "warning"
        assert app.theme == "textual-dark"


async def test_a_theme_picked_in_the_palette_is_saved_and_the_file_kept(make_app, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, "utf-8")
    async with make_app() as (app, pilot):
        await pick_theme(app, pilot, "gruvbox")
        await wait_for(pilot, lambda: 'theme = "gruvbox"' in path.read_text("utf-8"), what="the saved theme")
        assert path.read_text("utf-8") == CONFIG.replace('the test server\n\n', 'the test server\n\ntheme = "gruvbox"\n\n')
        await pick_theme(app, pilot, "nord")
        await wait_for(pilot, lambda: 'theme = "nord"' in path.read_text("utf-8"), what="the second theme")
        assert path.read_text("utf-8").count("theme =") == 1


async def test_a_config_that_cannot_be_edited_is_one_warning_and_stays(make_app, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, "utf-8")
    async with make_app() as (app, pilot):
        path.write_text(CONFIG + "oops = \n", "utf-8")  # broken while the app runs
        app.theme = "nord"
        await wait_for(pilot, lambda: any("not saved" in n.message for n in notifications(app)), what="the warning")
        assert path.read_text("utf-8") == CONFIG + "oops = \n"


def code_theme(body: MarkdownBody) -> str:
    """The code theme of the Markdown a reply is drawn with (under its copy lines, if any)."""
    from rich.console import Group
    from rich.markdown import Markdown

    content = body.content
    parts = content.renderables if isinstance(content, Group) else [content]
    return next(p.code_theme for p in parts if isinstance(p, Markdown))


async def test_code_blocks_follow_light_and_dark(make_app, fake):
    fake.script_openai(["Here:\n\n```python\nprint('hi')\n```\n"])
    async with make_app() as (app, pilot):
        from .conftest import idle, type_text

        await type_text(pilot, "show code")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and app.query(MarkdownBody), what="the reply")
        body = app.query_one(MarkdownBody)
        assert code_theme(body) == "monokai"
        app.theme = "textual-light"
        await wait_for(pilot, lambda: code_theme(app.query_one(MarkdownBody)) == "default", what="light code")
        app.theme = "gruvbox"
        await wait_for(pilot, lambda: code_theme(app.query_one(MarkdownBody)) == "monokai", what="dark code")
