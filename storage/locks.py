"""Waiting for another process's lock on a database or a session file: bounded, and said at once
(issue 21: `-p` waited 200 s, an import 100 s and a reindex until the lock ended, all silently).

A write that finds the lock held waits up to `timeout` seconds in all; once it has waited
`notice_after` seconds the newest listener (`listen`: stderr for the CLI, a notice in the app)
is told, once, "another treechat process is writing PATH, waiting up to N s". Past the timeout
the write fails with `StorageLockedError`, naming the file and the setting that raises the bound.
Listeners may be called from a database thread: they must be thread-safe.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .base import StorageError

LOCK_TIMEOUT = 30.0  # seconds a write waits for another process in all (config.toml: lock_timeout)
NOTICE_AFTER = 0.5  # seconds of waiting before the wait is announced
POLL = 0.05  # seconds between tries of a lock that cannot wait by itself (flock)

Listener = Callable[[str], None]


class StorageLockedError(StorageError):
    """Another process held the lock for the whole wait; nothing was written."""


@dataclass
class LockPolicy:
    timeout: float = LOCK_TIMEOUT
    notice_after: float = NOTICE_AFTER


_policy = LockPolicy()
_listeners: list[Listener] = []
_guard = threading.Lock()


def set_lock_timeout(seconds: float) -> None:
    """The bound every later wait uses (config.toml's `lock_timeout`)."""
    _policy.timeout = float(seconds)


def lock_timeout() -> float:
    return _policy.timeout


def add_listener(listener: Listener) -> Callable[[], None]:
    """`listener` is the one told about waits until the returned function removes it (the newest
    one wins: the app's notice while its screen is up, stderr before and after)."""
    with _guard:
        _listeners.append(listener)

    def remove() -> None:
        with _guard:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


@contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """`add_listener` for the length of a block."""
    remove = add_listener(listener)
    try:
        yield
    finally:
        remove()


def _tell(text: str) -> None:
    with _guard:
        listener = _listeners[-1] if _listeners else None
    if listener is not None:
        try:
            listener(text)
        except Exception:  # noqa: BLE001 - telling must never break the write itself
            pass


class LockWait:
    """One wait for one lock: call `busy()` each time the lock was found held. It announces the
    wait once past `notice_after` and raises StorageLockedError past `timeout`."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.started = time.monotonic()
        self.announced = False
        self.timeout = _policy.timeout

    def busy(self) -> None:
        waited = time.monotonic() - self.started
        if not self.announced and waited >= _policy.notice_after:
            self.announced = True
            _tell(f"another treechat process is writing {self.path}, waiting up to {self.timeout:g} s")
        if waited >= self.timeout:
            raise StorageLockedError(
                f"{self.path} stayed locked by another process for {self.timeout:g} s, so nothing was saved; try "
                "again once it is done, or raise lock_timeout in config.toml")

    def remaining(self) -> float:
        return max(self.timeout - (time.monotonic() - self.started), 0.0)
