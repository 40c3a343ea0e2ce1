"""The App's own keys (`widgets.keymap`, context "global"): each is one controller call or one
screen change."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from .base import TuiBase

if TYPE_CHECKING:
    from treechat.editor import EditorError


class KeyActions(TuiBase):
    async def action_toggle_tree(self) -> None:
        self.panel.toggle(self.tree_view, self.composer)

    async def action_sessions(self) -> None:
        await self.run_command("resume", "")

    async def action_search(self) -> None:
        await self.run_command("search", "")

    async def action_model(self) -> None:
        await self.run_command("model", "")

    async def action_thinking(self) -> None:
        await self.run_command("thinking", "")

    async def action_new_session(self) -> None:
        await self.run_command("new", "")

    async def action_help(self) -> None:
        await self.run_command("help", "")

    async def action_back(self) -> None:
        await self.run_command("back", "")

    def action_toggle_tool_output(self) -> None:
        self.transcript.toggle_tools()

    def action_toggle_thinking_blocks(self) -> None:
        self.transcript.toggle_thinking()

    async def action_stop(self) -> None:
        """Esc: end a preview, or stop the run (what was queued goes out next); with neither, in
        a narrow terminal's tree drawer, close the drawer (it covers the conversation)."""
        if self.chat.preview_id is None and not self.chat.is_running and self.panel.narrow and self.tree_view.has_focus:
            self.panel.hide()
            self.composer.focus()
            return
        await self.attempt(self.chat.stop())

    async def action_pull_queued(self) -> None:
        await self.pull_queued()

    async def action_edit_in_editor(self) -> None:
        """Ctrl+G: the composer's text in $VISUAL/$EDITOR; the saved text comes back."""
        from treechat.editor import EditorError, edit_text, editor_command

        composer = self.composer
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
            self.show_error(str(err))
            return
        try:
            with self.suspend():
                edited = run(command)
        except SuspendNotSupported:  # no terminal to hand over (headless): run it beside the app
            edited = await asyncio.to_thread(run, command)
        if isinstance(edited, EditorError):
            self.show_error(str(edited))
            return
        composer.set_text(edited.rstrip("\n"))
        composer.focus()

    _quit_armed = False  # the last key was a Ctrl+C that said how to quit: another one quits

    async def action_interrupt(self) -> None:
        """Ctrl+C, as in Pi and Claude Code: stop what runs (a reply, a tool, a question it asks);
        else copy a selection, or clear the draft (kept for ↑); else say how to quit, and quit on
        the next Ctrl+C."""
        armed, self._quit_armed = self._quit_armed, False
        if self.screen is not self.screen_stack[0]:
            close = getattr(self.screen, "action_close", None)
            if close is not None:
                close()  # a dialog or picker: as Esc
            return
        if self.started and self.chat.is_running:
            await self.attempt(self.chat.stop_run())
            return
        composer = self.composer
        if composer.has_focus and composer.selected_text:
            await self.copy(composer.selected_text, "the selection")
            return
        if composer.text.strip():
            composer.clear_draft()
            self.notify("Draft cleared (↑ brings it back).", timeout=3)
            return
        if armed:
            await self.action_quit()
            return
        self._quit_armed = True
        self.notify("Press Ctrl+C again to quit (Ctrl+Q quits too).", timeout=4)

    async def action_quit(self) -> None:
        """Ctrl+Q: asks first while a reply runs or messages wait; whatever was typed or queued is
        kept as the session's draft for next time."""
        if not self.started:  # nothing typed yet (else the key waited for the session: starting.py)
            self.exit()
            return
        if not self.chat.is_busy:
            await self.quit_keeping_draft()
            return

        async def done(ok: bool | None) -> None:
            if ok:
                await self.quit_keeping_draft()

        from treechat.widgets.screens import ConfirmDialog

        self.push_screen(ConfirmDialog("Stop the running reply and quit?",
                                       "The partial reply is saved; queued messages come back as a draft.",
                                       yes="Quit", no="Stay"), callback=done)

    async def quit_keeping_draft(self) -> None:
        text = self.composer.text
        self.stop_listening()  # stopping a reply writes entries; nothing is left to draw them on
        await self.chat.close(composer_text=text)
        self.exit()
