"""The steering and follow-up queues. The TUI shows, edits and pulls back their items."""

from __future__ import annotations

import itertools
from typing import Literal

from .types import AgentMessage

QueueMode = Literal["one-at-a-time", "all"]
QueueKind = Literal["steer", "follow_up"]
_MODES = ("one-at-a-time", "all")
_order = itertools.count()  # global enqueue order, so "the last queued" spans both queues


class MessageQueue:
    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        self.mode = mode
        self._items: list[tuple[int, AgentMessage]] = []

    @property
    def mode(self) -> QueueMode:
        return self._mode

    @mode.setter
    def mode(self, value: QueueMode) -> None:
        if value not in _MODES:
            raise ValueError(f"Queue mode must be 'one-at-a-time' or 'all', not {value!r}.")
        self._mode = value

    @property
    def items(self) -> tuple[AgentMessage, ...]:
        return tuple(m for _, m in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def enqueue(self, message: AgentMessage) -> None:
        self._items.append((next(_order), message))

    def drain(self) -> list[AgentMessage]:
        """Everything in `all` mode, else the head only; [] when empty."""
        if not self._items:
            return []
        if self._mode == "all":
            taken, self._items = self._items, []
            return [m for _, m in taken]
        return [self._items.pop(0)[1]]

    def clear(self) -> list[AgentMessage]:
        taken, self._items = self._items, []
        return [m for _, m in taken]

    def remove(self, index: int) -> AgentMessage:
        """Remove and return the item at `index` (IndexError if there is none)."""
        return self._items.pop(index)[1]

    def last_order(self) -> int | None:
        return self._items[-1][0] if self._items else None

    def pop_last(self) -> AgentMessage | None:
        return self._items.pop()[1] if self._items else None
