"""The floor of tui.first_frame: a minimal Textual app (an Input and a Footer), nothing of ours.

    .venv/bin/python bench/minimal_textual.py

bench/tui.py starts it in the same terminal as `treechat` (alternating runs) and waits for the
same two things on screen: the input's placeholder and the footer's palette key."""

from textual.app import App, ComposeResult
from textual.widgets import Footer, Input


class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Input(placeholder="Message… (/help")
        yield Footer()


if __name__ == "__main__":
    Minimal().run()
