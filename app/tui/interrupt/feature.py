"""Esc, Ctrl+C and Ctrl+Q. Esc ends a preview or stops the run (what was queued goes out next);
Ctrl+C, as in Pi and Claude Code, stops what runs, else copies a selection or clears the draft,
else says how to quit and quits on the next Ctrl+C; Ctrl+Q asks first while a reply runs or
messages wait. Whatever was typed or queued is kept as the session's draft for next time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from ..shell import Shell
    from ..tree.panel import TreePanel


class Interrupt:
    """Handed the Textual App itself (its screens, `exit`), and `started` and `stop_listening`:
    whether the session is open, and how the App stops drawing the controller's events."""

    def __init__(self, shell: Shell, app: App[int], panel: TreePanel, *, started: Callable[[], bool],
                 stop_listening: Callable[[], None]) -> None:
        self.shell, self.app, self.panel = shell, app, panel
        self.started, self.stop_listening = started, stop_listening
        self.armed = False  # the last key was a Ctrl+C that said how to quit: another one quits

    async def stop(self) -> None:
        """Esc: end a preview, or stop the run of the branch on screen (what was queued goes out
        next); with neither, in a narrow terminal's tree drawer, close the drawer (it covers the
        conversation), else say where the runs going are (Esc here stops none of them)."""
        shell = self.shell
        chat = shell.chat
        if chat.preview_id is None and not chat.is_running_here:
            if self.panel.narrow and shell.tree_view.has_focus:
                self.panel.hide()
                shell.composer.focus()
            elif going := len(chat.runs):
                shell.notify(f"No reply runs on this branch; {going} {'run' if going == 1 else 'runs'} on "
                             f"{'another branch' if going == 1 else 'other branches'} (the tree marks "
                             f"{'it' if going == 1 else 'them'}): Esc at a branch's end stops its run.", timeout=5)
            return
        await shell.attempt(chat.stop())

    async def interrupt(self) -> None:
        """Ctrl+C: stop what runs on the branch on screen (a reply, a tool, a question it asks; a run
        on another branch is not this one's to stop); else copy a selection, or clear the draft (kept
        for ↑); else say how to quit, and quit on the next Ctrl+C."""
        armed, self.armed = self.armed, False
        app, shell = self.app, self.shell
        if app.screen is not app.screen_stack[0]:
            close = getattr(app.screen, "action_close", None)
            if close is not None:
                close()  # a dialog or picker: as Esc
            return
        if self.started() and shell.chat.is_running_here:  # (runs on other branches go on)
            await shell.attempt(shell.chat.stop_run())
            return
        composer = shell.composer
        if composer.has_focus and composer.selected_text:
            await shell.copy(composer.selected_text, "the selection")
            return
        if composer.text.strip():
            composer.clear_draft()
            shell.notify("Draft cleared (↑ brings it back).", timeout=3)
            return
        if armed:
            await self.quit()
            return
        self.armed = True
        shell.notify("Press Ctrl+C again to quit (Ctrl+Q quits too).", timeout=4)

    async def quit(self) -> None:
        """Ctrl+Q: asks first while a reply runs or messages wait; whatever was typed or queued is
        kept as the session's draft for next time."""
        if not self.started():  # nothing typed yet (else the key waited for the session: startup/)
            self.app.exit()
            return
        if not self.shell.chat.is_busy:
            await self.quit_keeping_draft()
            return
        self.shell.run_worker(self._ask_first(), group="dialog")

    async def _ask_first(self) -> None:
        from treechat.widgets.screens import ConfirmDialog

        runs = len(self.shell.chat.runs)
        if runs > 1:  # several branches run at once (issue 39): say how many stop
            question = f"Stop the {runs} running replies and quit?"
            body = "The partial replies are saved, each on its branch; queued messages come back as a draft."
        else:
            question = "Stop the running reply and quit?"
            body = "The partial reply is saved; queued messages come back as a draft."
        if await self.shell.ask(ConfirmDialog(question, body, yes="Quit", no="Stay")):
            await self.quit_keeping_draft()

    async def quit_keeping_draft(self) -> None:
        text = self.shell.composer.text
        self.stop_listening()  # stopping a reply writes entries; nothing is left to draw them on
        await self.shell.chat.close(composer_text=text)
        self.app.exit()
