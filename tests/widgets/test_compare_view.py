"""The compare view's columns draw a streaming reply at most every DRAW_EVERY seconds (each draw
wraps the whole text again), and a reply that ends is shown whole at once."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from treechat.widgets.compare.view import CompareView


class Opener(App[None]):
    CSS_PATH = "../../styles.tcss"

    def compose(self) -> ComposeResult:
        yield Static("under")


def body(view: CompareView, run: str) -> str:
    return str(view.query_one(f"#run-{run} .body", Static).render())


async def test_a_burst_of_reads_is_one_draw_and_the_end_is_drawn_at_once() -> None:
    app = Opener()
    async with app.run_test(size=(120, 30)) as pilot:
        view = CompareView([("r1", "openai/a"), ("r2", "openai/b")], "hi")
        await app.push_screen(view)
        await pilot.pause()
        for n in range(200):
            view.set_reply("r1", f"text {n}")
        assert body(view, "r1") == ""  # nothing drawn within the burst
        await pilot.pause(0.3)
        assert body(view, "r1") == "text 199"  # one draw, of the last text
        view.set_reply("r2", "the whole answer")
        view.set_state("r2", "done")
        assert body(view, "r2") == "the whole answer"  # ended: no wait
