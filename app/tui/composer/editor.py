"""Ctrl+G: the composer's text in $VISUAL/$EDITOR; the saved text comes back."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

if TYPE_CHECKING:
    from textual.app import App

    from treechat.editor import EditorError

    from ..shell import Shell


async def edit_in_editor(app: App[int], shell: Shell) -> None:
    """The editor runs with the terminal handed over (`App.suspend`), or beside the app where
    there is none to hand over (headless)."""
    from treechat.editor import EditorError, edit_text, editor_command

    composer = shell.composer
    text = composer.text

    def run(command: list[str]) -> str | EditorError:
        # the failure is returned, not raised: Textual's suspend() resumes the app only when its
        # block ends normally, and an editor that fails would leave the terminal in line mode
        try:
            return edit_text(text, command)
        except EditorError as err:
            return err

    try:
        command = editor_command()
    except EditorError as err:
        shell.show_error(str(err))
        return
    try:
        with app.suspend():
            edited = run(command)
    except SuspendNotSupported:  # no terminal to hand over (headless): run it beside the app
        edited = await asyncio.to_thread(run, command)
    if isinstance(edited, EditorError):
        shell.show_error(str(edited))
        return
    composer.set_text(edited.rstrip("\n"))
    composer.focus()
