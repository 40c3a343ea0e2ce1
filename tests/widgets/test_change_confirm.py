"""ChangeConfirmDialog on its own: the diff is drawn as text in colour and scrolls with the keys
(which never answer it), the session choice is offered only when asked for, and what it returns."""

from __future__ import annotations

from textual.app import App
from textual.containers import VerticalScroll

from treechat.widgets.screens import ChangeConfirmDialog
from treechat.widgets.screens.change_confirm import SCROLL_KEYS
from treechat.widgets.transcript.diff_view import render_diff

LONG = "--- a/x\n+++ b/x\n@@ -1,120 +0,0 @@\n" + "\n".join(f"-row {i}" for i in range(120))


class Host(App[object]):
    def __init__(self, dialog: ChangeConfirmDialog) -> None:
        super().__init__()
        self.dialog = dialog

    def on_mount(self) -> None:
        self.push_screen(self.dialog, callback=self.exit)


async def settle(pilot, dialog: ChangeConfirmDialog) -> None:
    for _ in range(200):
        if dialog.shown_at < float("inf"):
            break
        await pilot.pause(0.01)
    await pilot.pause(dialog.ARM_DELAY + 0.1)


async def test_the_diff_scrolls_with_every_scroll_key_and_none_answers() -> None:
    dialog = ChangeConfirmDialog("Restore 1 file?", LONG, yes="Restore", no="Keep", allow=None)
    app = Host(dialog)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, dialog)
        body = dialog.query_one("#diff", VerticalScroll)
        for key in ("pagedown", "down", "end", "pageup", "up", "home"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is dialog, key
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y > 0 and set(SCROLL_KEYS) == {"pageup", "pagedown", "up", "down", "home", "end"}
        assert dialog.query_one("#buttons").region.bottom <= 24  # the answers stay on an 80×24 screen
        await pilot.press("a")  # no session choice here: not an answer
        await pilot.pause()
        assert app.screen is dialog
        await pilot.press("y")
    assert app.return_value is True


async def test_allow_for_the_session_is_offered_when_asked_for() -> None:
    dialog = ChangeConfirmDialog("Apply this edit?", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b")
    app = Host(dialog)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, dialog)
        assert dialog.query_one("#session").label.plain == "Allow edits for this session (a)"
        await pilot.press("a")
    assert app.return_value == ChangeConfirmDialog.ALLOW_SESSION


def test_diff_lines_are_coloured_and_their_controls_visible() -> None:
    text = render_diff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old \x1b]52;c;QQ==\x07\n+new\ttab\n context")
    assert "␛]52;c;QQ==␇" in text.plain and "\x1b" not in text.plain and "new    tab" in text.plain
    styles = {span.style.color.name for span in text.spans if span.style.color}
    assert {"red", "green", "cyan"} <= styles
