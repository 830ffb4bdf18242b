"""The sink process's cyclic collector: off, and a whole collection now and then after a batch.

The history cache keeps every cached session's state alive, about twenty tracked objects
per applied record, and a batch's decoded records live until its commit: Python's automatic
collections walk them again and again, about a third of the sink's CPU in ``ctxstream bench
sink``. Those objects die by reference counting (decoding, rows and the classification make
no reference cycles), so :class:`HeapCollector` turns the automatic collector off and, after
a batch, collects whole only when the heap grew by :data:`GROWTH` since the last whole
collection and `period_s` passed: the cyclic garbage kept is at most that growth or a
period's worth, and the whole collections cost a bounded share of the time.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Final

#: The net growth of the tracked heap, as a share of it, that calls for a whole collection.
GROWTH: Final = 0.25
#: The tracked heap assumed at least, so a small heap is not collected after every batch.
MIN_HEAP: Final = 100_000


class HeapCollector:
    """The process's collections: none automatic, a whole one after a batch when due."""

    def __init__(self, period_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        """Whole collections at most every `period_s` seconds of `clock`."""
        if period_s <= 0:
            raise ValueError(f"the whole collections' period must be positive, not {period_s}")
        self._period_s = period_s
        self._clock = clock
        self._last = clock()
        self._heap = MIN_HEAP

    def start(self) -> None:
        """Turn the automatic collector off (for the rest of the process)."""
        gc.disable()

    def settle(self) -> bool:
        """After a batch: collect whole when due; True when it did."""
        grown = gc.get_count()[0]  # tracked objects allocated since, net of those freed
        now = self._clock()
        if grown <= GROWTH * self._heap or now - self._last < self._period_s:
            return False
        gc.collect()
        self._last = now
        self._heap = max(MIN_HEAP, len(gc.get_objects()))
        return True
