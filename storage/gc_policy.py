"""The one garbage-collection policy: when big trees are built, and after a session is loaded.

A 100k-entry session makes ~10^5 small objects at once (rows, tuples, dicts) and no reference
cycles. CPython's cyclic collector, left alone, would rescan them over and over while they are
made (measured: reading or flattening 100k rows ~2.5-3x slower), and later walk all of them on
every old-generation collection (a visible pause while typing). So:

- ``paused()`` around a bulk build: no cyclic collection inside, the previous state restored;
  ``paused(keep=True)`` when what the block made outlives it (a path handed out, a batch about to
  be stored): it is then frozen, since otherwise the first collection after the block walks every
  object of it (a quarter of reading a 2,700-entry path) and the next generations walk them again;
- ``settle()`` once a session is on screen: free what the previous one left, then freeze what is
  live (later collections skip it) and make young collections rarer (streaming allocates briskly);
- ``streaming(True)`` while a reply streams: what is live is frozen and no full collection runs
  (a full one walked everything made since the last freeze: pauses up to 265 ms while typing);
  ``streaming(False)`` freezes what the reply left (its widgets and text stay on screen) and
  lets full collections run again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 20_000  # allocations between young collections (CPython's default is 700)
NO_FULL = 1_000_000  # generation-1 collections between full ones: none while a reply streams
# While streaming, young collections small and frequent: with 20,000 a generation-1 collection
# walked up to 400,000 objects (60-80 ms pauses measured); 2,000 x 10 keeps each under a few ms.
STREAM_YOUNG = 2_000


@contextmanager
def paused(*, keep: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block (reference counting still frees everything); with
    `keep`, everything alive when the block ends is frozen (see the module's doc: the objects
    made hold no cycles, and reference counting frees frozen objects as any other)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if enabled:
            gc.enable()


def keep_loaded() -> None:
    """What was just built stays alive: move it out of the collector's sight."""
    gc.freeze()


def settle() -> None:
    """After a session is loaded and drawn: collect what the previous one left, freeze the rest."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 20, 20)


def streaming(on: bool) -> None:
    """A reply started (True) or ended (False) streaming; see the module's doc."""
    gc.freeze()
    if on:
        gc.set_threshold(STREAM_YOUNG, 10, NO_FULL)
    else:
        gc.set_threshold(YOUNG_THRESHOLD, 20, 20)
