"""The status bar's token counts when a server counts none (llama-cpp-python streams no usage):
"↑? ↓?", not a "↑0 ↓0" that reads as a fact; once a reply on the path carries usage, the numbers."""

from __future__ import annotations

from treechat.chat.status import build_status
from treechat.llm.registry import ModelRegistry
from treechat.storage.base import PathState
from treechat.widgets.composer.view import Composer

from .conftest import idle, screen_text, wait_for


def test_counts_are_unknown_only_when_replies_came_without_any() -> None:
    registry = ModelRegistry(env={})

    def reported(state: PathState) -> bool:
        return build_status(state, None, None, registry).tokens_reported

    assert reported(PathState())  # nothing yet: 0 is the truth
    assert reported(PathState(message_count=1))  # a prompt, no reply yet
    assert not reported(PathState(message_count=2))  # a reply, and no token counted
    assert reported(PathState(message_count=2, output_tokens=7))
    assert reported(PathState(message_count=4, cache_read_tokens=900))


async def test_a_server_without_usage_shows_unknown_counts_then_real_ones(make_app, fake):
    fake.script_openai(["a reply with no usage"])
    async with make_app(size=(120, 30)) as (app, pilot):
        composer = app.ui(Composer)
        composer.load_text("first")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "a reply with no usage" in screen_text(app) and idle(app), what="the reply")
        await wait_for(pilot, lambda: "↑? ↓?" in screen_text(app), what="unknown counts")
        fake.script_openai(["counted this time"], usage={"prompt_tokens": 1500, "completion_tokens": 20,
                                                         "total_tokens": 1520})
        composer.load_text("second")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "counted this time" in screen_text(app) and idle(app), what="the reply")
        await wait_for(pilot, lambda: "↑1.5k ↓20" in screen_text(app), what="the counts")
        assert "↑? ↓?" not in screen_text(app)
