"""The event bus's contract (treechat.agent.bus): order, unsubscribe, and where a listener's
exception goes — every other listener still gets the event, the first error reaches the emitter,
a second is logged."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from treechat.agent.bus import EventBus


async def test_listeners_run_in_order_each_awaited_before_the_next() -> None:
    bus: EventBus[int] = EventBus()
    seen: list[str] = []

    async def slow(event: int) -> None:
        await asyncio.sleep(0)
        seen.append(f"slow {event}")

    bus.subscribe(slow)
    def sync(event: int) -> Any:  # a sync listener's value is ignored
        seen.append(f"sync {event}")
        return event

    bus.subscribe(sync)
    await bus.emit(1)
    await bus.emit(2)
    assert seen == ["slow 1", "sync 1", "slow 2", "sync 2"]


async def test_unsubscribe_is_idempotent_and_a_listener_added_meanwhile_starts_next_time() -> None:
    bus: EventBus[int] = EventBus()
    seen: list[tuple[str, int]] = []

    def late(event: int) -> None:
        seen.append(("late", event))

    def first(event: int) -> None:
        seen.append(("first", event))
        if event == 1:
            bus.subscribe(late)

    stop = bus.subscribe(first)
    await bus.emit(1)
    await bus.emit(2)
    stop()
    stop()
    await bus.emit(3)
    assert seen == [("first", 1), ("first", 2), ("late", 2), ("late", 3)]
    assert len(bus) == 1


async def test_a_raising_listener_does_not_stop_the_others_and_its_error_reaches_the_emitter(caplog) -> None:
    bus: EventBus[str] = EventBus()
    seen: list[str] = []

    def broken(event: str) -> None:
        raise ValueError(f"broken on {event}")

    async def also_broken(event: str) -> None:
        raise KeyError(event)

    bus.subscribe(broken)
    bus.subscribe(also_broken)
    bus.subscribe(seen.append)
    with caplog.at_level(logging.ERROR, logger="treechat.agent.bus"):
        with pytest.raises(ValueError, match="broken on x"):
            await bus.emit("x")
    assert seen == ["x"]  # the listener after the broken ones had the event
    assert "KeyError" in caplog.text  # the second failure is logged, not lost


def test_emit_now_calls_synchronously_and_refuses_an_async_listener() -> None:
    bus: EventBus[int] = EventBus()
    seen: list[int] = []

    async def coroutine_listener(event: int) -> None:
        seen.append(-event)  # never runs: this bus cannot await it

    bus.subscribe(coroutine_listener)
    def sync(event: int) -> Any:  # (its value, ignored)
        seen.append(event)
        return event

    bus.subscribe(sync)
    with pytest.raises(TypeError, match="synchronously"):
        bus.emit_now(7)
    assert seen == [7]  # no "coroutine was never awaited": it was closed
