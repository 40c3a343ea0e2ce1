"""The App through its typed messages: each controller event arrives as one message of the same
name, and a change redraws only what it affects (no whole-view reload for a name or a setting)."""

from __future__ import annotations

from typing import Any

from treechat.tui import messages as m

from .conftest import idle, type_text, wait_for


class Seen:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    def __call__(self, message: Any) -> None:
        if isinstance(message, m.ChatMessage):
            self.messages.append(message)

    def names(self) -> list[str]:
        return [type(x).__name__ for x in self.messages]

    def clear(self) -> None:
        self.messages.clear()


async def test_a_send_arrives_as_typed_messages_in_order(make_app, fake):
    fake.script_openai(["Hello"])
    seen = Seen()
    async with make_app(message_hook=seen) as (app, pilot):
        assert seen.names()[0] == "SessionOpened"
        seen.clear()
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and "RunEnded" in seen.names(), what="the reply")
        names = seen.names()
        assert names.index("RunStarted") < names.index("ReplyStreaming") < names.index("RunEnded")
        appended = [x.event for x in seen.messages if isinstance(x, m.EntryAppended)]
        kinds = [(e.entry.type, getattr(getattr(e.entry, "message", None), "role", None)) for e in appended]
        assert ("message", "user") in kinds and ("message", "assistant") in kinds
        assert "SessionOpened" not in names and "PathChanged" not in names  # nothing was reloaded


async def test_names_labels_and_settings_redraw_only_what_they_change(make_app, fake):
    fake.script_openai(["Hello"])
    seen = Seen()
    async with make_app(message_hook=seen) as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause()
        for line in ("/name Project X", "/label milestone", "/thinking high"):
            seen.clear()
            await type_text(pilot, line)
            await pilot.press("enter")
            await wait_for(pilot, lambda: "StatusChanged" in seen.names(), what=line)
            await pilot.pause()
            names = seen.names()
            assert "SessionOpened" not in names and "PathChanged" not in names, (line, names)
            assert names.count("EntryAppended") <= 1, (line, names)
        assert "Project X" in str(app.query_one("SessionHeader").render())


async def test_no_full_collection_runs_while_a_reply_streams(make_app, fake):
    """storage.gc_policy: a full collection walked everything made since the last freeze (pauses
    of up to 265 ms while typing during a reply); while tokens arrive only young ones run."""
    import gc

    from treechat.storage import gc_policy

    fake.script_openai(["Hello", " there"])
    during: list[tuple[int, int, int]] = []

    def hook(message: Any) -> None:
        if isinstance(message, m.ReplyStreaming):
            during.append(gc.get_threshold())

    async with make_app(message_hook=hook) as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and bool(during), what="the reply")
        await wait_for(pilot, lambda: not app.chat.is_running, what="the end of the run")
        await pilot.pause()
        assert during and all(t[2] == gc_policy.NO_FULL for t in during)
        assert gc.get_threshold()[2] != gc_policy.NO_FULL  # full collections again once it ended
