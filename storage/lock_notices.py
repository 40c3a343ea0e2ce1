"""Who is told about a wait for another process's lock (storage/locks.py): the newest listener.

Apart from locks.py, which needs the storage vocabulary (its error is a StorageError), so that
the CLI can listen from its first line and the app's first frame is drawn before that
vocabulary loads (issue 27). Listeners may be called from a database thread: they must be
thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str], None]

_listeners: list[Listener] = []
_guard = threading.Lock()


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


def tell(text: str) -> None:
    with _guard:
        listener = _listeners[-1] if _listeners else None
    if listener is not None:
        try:
            listener(text)
        except Exception:  # noqa: BLE001 - telling must never break the write itself
            pass
