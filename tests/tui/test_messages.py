"""The App through its one typed message: each controller event (a turn's `ChatDelta`, or a
discrete event) arrives as a `ChatMessage`, and a change redraws only what it affects (no
whole-view reload for a name or a setting)."""

from __future__ import annotations

from typing import Any

from treechat.chat.events import ChatDelta, ChatEvent, ReplyStreaming, SessionOpened
from treechat.tui.messages import ChatMessage

from .conftest import idle, type_text, wait_for


class Seen:
    def __init__(self) -> None:
        self.events: list[ChatEvent] = []

    def __call__(self, message: Any) -> None:
        if isinstance(message, ChatMessage):
            self.events.append(message.event)

    def deltas(self) -> list[ChatDelta]:
        return [e for e in self.events if isinstance(e, ChatDelta)]

    def kinds(self) -> list[type]:
        return [type(e) for e in self.events]

    def clear(self) -> None:
        self.events.clear()


async def test_a_send_arrives_as_typed_messages_in_order(make_app, fake):
    fake.script_openai(["Hello"])
    seen = Seen()
    async with make_app(message_hook=seen) as (app, pilot):
        assert seen.kinds()[0] is SessionOpened
        seen.clear()
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and any(d.running is False for d in seen.deltas()), what="the reply")
        kinds, deltas = seen.kinds(), seen.deltas()
        started = next(i for i, e in enumerate(seen.events) if isinstance(e, ChatDelta) and e.running)
        ended = next(i for i, e in enumerate(seen.events) if isinstance(e, ChatDelta) and e.running is False)
        assert started < kinds.index(ReplyStreaming) < ended
        appended = [a.entry for d in deltas for a in d.appended]
        roles = [(e.type, getattr(getattr(e, "message", None), "role", None)) for e in appended]
        assert ("message", "user") in roles and ("message", "assistant") in roles
        assert SessionOpened not in kinds and all(d.path is None for d in deltas)  # nothing was reloaded


async def test_names_labels_and_settings_redraw_only_what_they_change(make_app, fake):
    fake.script_openai(["Hello"])
    seen = Seen()
    async with make_app(message_hook=seen) as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app), what="the reply")
        await pilot.pause()
        for line, changed in (("/name Project X", "header"), ("/label milestone", "labels"),
                              ("/thinking high", None)):
            seen.clear()
            await type_text(pilot, line)
            await pilot.press("enter")
            # (the fake model has no thinking levels: "off" stays, only a notice says so)
            def told(changed: str | None = changed) -> bool:
                return any(getattr(d, changed) for d in seen.deltas()) if changed else bool(seen.events)

            await wait_for(pilot, told, what=line)
            await pilot.pause()
            assert SessionOpened not in seen.kinds() and all(d.path is None for d in seen.deltas()), line
            assert sum(len(d.appended) for d in seen.deltas()) <= 1, line
        assert "Project X" in str(app.query_one("SessionHeader").render())


async def test_no_full_collection_runs_while_a_reply_streams(make_app, fake):
    """storage.gc_policy: a full collection walked everything made since the last freeze (pauses
    of up to 265 ms while typing during a reply); while tokens arrive only young ones run."""
    import gc

    from treechat.storage import gc_policy

    fake.script_openai(["Hello", " there"])
    during: list[tuple[int, int, int]] = []

    def hook(message: Any) -> None:
        if isinstance(message, ChatMessage) and isinstance(message.event, ReplyStreaming):
            during.append(gc.get_threshold())

    async with make_app(message_hook=hook) as (app, pilot):
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and bool(during), what="the reply")
        await wait_for(pilot, lambda: not app.chat.is_running, what="the end of the run")
        await pilot.pause()
        assert during and all(t[2] == gc_policy.NO_FULL for t in during)
        assert gc.get_threshold()[2] != gc_policy.NO_FULL  # full collections again once it ended
