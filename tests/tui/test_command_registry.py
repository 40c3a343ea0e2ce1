"""Slash commands are registered on their handlers (`treechat.tui.registry.command`): one
registration puts a command in the composer's Tab completion (its name and its arguments), in
F1 and `/help`, in the palette, and dispatches `/name args` to it."""

from __future__ import annotations

from textual.widgets import Static

from treechat.tui import TreechatApp
from treechat.tui.registry import command
from treechat.widgets.composer.view import Composer
from treechat.widgets.screens import HelpScreen

from .conftest import screen_text, type_text, wait_for


class EchoApp(TreechatApp):
    heard: list[str]

    @command("echo", title="Say it back", args="TEXT", help="repeats TEXT in a notice",
             complete=lambda chat: ("hello", "help me", chat.session_id))
    async def cmd_echo(self, args: str) -> None:
        self.heard = [*getattr(self, "heard", []), args]
        self.notify(f"echo: {args}")


def test_a_command_is_on_the_app_class_that_registered_it() -> None:
    assert "echo" in EchoApp.slash_commands and "echo" not in TreechatApp.slash_commands
    assert set(TreechatApp.slash_commands) < set(EchoApp.slash_commands)
    row = next(r for r in EchoApp.command_table() if r.name == "echo")
    assert (row.usage, row.title, row.help) == ("/echo TEXT", "Say it back", "repeats TEXT in a notice")
    # the App lists its features in the order of its bases: /help is the last built-in one
    assert list(TreechatApp.slash_commands)[-1] == "help"


async def test_a_registered_command_completes_dispatches_and_is_in_help(make_app) -> None:
    async with make_app(app_class=EchoApp) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded, what="Tab completion of commands")
        composer = app.query_one(Composer)
        await type_text(pilot, "/ec")
        await pilot.press("tab")
        assert composer.text == "/echo "  # the name, from the registry
        await type_text(pilot, "he")
        await pilot.press("tab")
        assert composer.text == "/echo hel"  # the common part of "hello" and "help me"
        await type_text(pilot, "lo")
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(app, "heard", None) == ["hello"], what="the handler")
        assert composer.text == ""
        await type_text(pilot, "/echo " + app.chat.session_id[:4])
        await pilot.press("tab")  # the completer is asked now, of the controller
        assert composer.text == f"/echo {app.chat.session_id} "
        composer.clear()
        await app.run_command("help", "")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="/help")
        await wait_for(pilot, lambda: bool(app.screen.query(Static)), what="the help text")
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))  # (below the first page of keys)
        assert "/echo " in shown and "/restore " in shown and "/help" in shown


async def test_built_in_arguments_complete_and_a_typo_names_the_closest(make_app) -> None:
    async with make_app() as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded, what="Tab completion of commands")
        composer = app.query_one(Composer)
        await type_text(pilot, "/fork b")
        await pilot.press("tab")
        assert composer.text == "/fork before "
        composer.clear()
        await type_text(pilot, "/system o")
        await pilot.press("tab")
        assert composer.text == "/system off "
        composer.clear()
        await type_text(pilot, "/restore --u")
        await pilot.press("tab")
        assert composer.text == "/restore --undo "
        composer.clear()
        await type_text(pilot, "/modle")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Did you mean /model?" in screen_text(app), what="the closest command")
        assert composer.text == "/modle"  # the text stays


def test_the_palette_shows_every_argument_hint() -> None:
    """The palette reads its help as markup: "[TEXT]" and "[instructions]" were dropped as tags."""
    from textual.content import Content

    from treechat.tui.commands import TreechatCommands

    shown = {row.name: Content.from_markup(TreechatCommands._help(row)).plain for row in TreechatApp.command_table()}
    assert shown["label"] == "/label [TEXT]: a label on the leaf (empty clears)"
    assert shown["compact"].startswith("/compact [instructions]: ")
    assert shown["restore"].startswith("/restore [ENTRY] [--force] | --undo: ")
    assert all(f"/{name}" in text for name, text in shown.items())
