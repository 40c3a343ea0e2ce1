"""Waiting for another process's lock on a database or a session file: bounded, and said at once
(issue 21: `-p` waited 200 s, an import 100 s and a reindex until the lock ended, all silently).

A write that finds the lock held waits up to `timeout` seconds in all; once it has waited
`notice_after` seconds the newest listener (`listen`, lock_notices.py: stderr for the CLI, a notice in the app)
is told, once, "another treechat process is writing PATH, waiting up to N s". Past the timeout
the write fails with `StorageLockedError`, naming the file and the setting that raises the bound.
Listeners may be called from a database thread: they must be thread-safe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .base import StorageError
from .lock_notices import Listener, add_listener, listen
from .lock_notices import tell as _tell

__all__ = ["Listener", "StorageLockedError", "add_listener", "listen", "lock_timeout", "set_lock_timeout", "LockWait"]

LOCK_TIMEOUT = 30.0  # seconds a write waits for another process in all (config.toml: lock_timeout)
NOTICE_AFTER = 0.5  # seconds of waiting before the wait is announced
POLL = 0.05  # seconds between tries of a lock that cannot wait by itself (flock)


class StorageLockedError(StorageError):
    """Another process held the lock for the whole wait; nothing was written."""


@dataclass
class LockPolicy:
    timeout: float = LOCK_TIMEOUT
    notice_after: float = NOTICE_AFTER


_policy = LockPolicy()


def set_lock_timeout(seconds: float) -> None:
    """The bound every later wait uses (config.toml's `lock_timeout`)."""
    _policy.timeout = float(seconds)


def lock_timeout() -> float:
    return _policy.timeout


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
