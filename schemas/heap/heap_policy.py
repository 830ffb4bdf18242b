"""How a worker process steers the cyclic garbage collector: its long-lived heap out of reach.

Not pure: it sets :mod:`gc`'s thresholds, freezes and collects, and reads a clock.

A worker keeps long-lived state (the projector's cached sessions: persistent
maps and vectors, decoded models), and an automatic collection of the oldest
generation walks every object of it: with Python's rules the cost of one
event grows with the state held. The :data:`GcMode` a worker runs in:

* ``frozen``: automatic collections (with the worker's thresholds) for what a
  batch allocates and drops, and after each batch (:meth:`HeapPolicy.settle`)
  ``gc.freeze()``: what the batch left alive moves to the permanent
  generation, which automatic collections never walk;
* ``off``: no automatic collection at all (``gc.disable()``);
* ``automatic``: Python's collections with the worker's thresholds, nothing more.

In ``frozen`` and ``off`` a *whole collection* (``gc.unfreeze()``,
``gc.collect()``, ``gc.freeze()``) runs after a batch when state was
released (:meth:`HeapPolicy.released`: revoked partitions), or when
`period_s` passed and the heap grew by :data:`GROWTH` since the last one.
Memory stays bounded: frozen or not, an object nothing refers to is freed at
once by reference counting (an evicted session's projection); only cyclic
garbage waits for the next whole collection, so it is at most a quarter of
the largest heap plus what one period leaves. Figures and the choice:
``README.md``, "The cyclic garbage collector".
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Final, Literal, get_args

from schemas.heap.gc_meter import GcMeter

logger = logging.getLogger(__name__)

GcMode = Literal["frozen", "off", "automatic"]
"""How the worker's collections run (the module's docstring)."""
GC_MODES: Final[tuple[GcMode, ...]] = get_args(GcMode)

#: The net growth of the heap, as a share of it, that calls for a whole collection.
GROWTH: Final = 0.25
#: The heap assumed at least (tracked objects), so a small heap is not collected after every batch.
MIN_HEAP: Final = 100_000


class HeapPolicy:
    """One process's collections: its mode, thresholds and whole collections, measured."""

    def __init__(
        self,
        mode: GcMode,
        threshold: tuple[int, int, int] | None,
        period_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """A policy in `mode`, with `threshold` (None: Python's), whole at most every `period_s`.

        Raises:
            ValueError: `period_s` is not positive.
        """
        if period_s <= 0:
            raise ValueError(f"the whole collections' period must be positive, not {period_s}")
        self.mode: GcMode = mode
        self._threshold = threshold
        self._period_s = period_s
        self._clock = clock
        self._last = clock()
        self._started_cpu = time.process_time()
        self._heap = MIN_HEAP
        self._released = False
        self._found: tuple[tuple[int, int, int], bool] | None = None
        #: Every collection of the process since :meth:`start`, automatic or whole.
        self.meter = GcMeter()
        #: Whole collections this policy ran.
        self.whole_collections = 0
        #: Unreachable objects its whole collections found: cyclic garbage that was frozen or
        #: waited with the collector off.
        self.whole_found = 0

    def start(self) -> None:
        """Steer this process's collector from now on; what start-up made is frozen."""
        self._started_cpu = time.process_time()
        self._found = (gc.get_threshold(), gc.isenabled())
        self.meter.start()
        if self._threshold is not None:
            gc.set_threshold(*self._threshold)
        if self.mode == "automatic":
            return
        if self.mode == "off":
            gc.disable()
        self.collect()

    def released(self) -> None:
        """State was dropped (revoked partitions): the next :meth:`settle` collects whole."""
        self._released = True

    def settle(self) -> bool:
        """After a batch (or a restore): freeze what it left; collect whole when due.

        True when it collected whole.
        """
        if self.mode == "automatic":
            return False
        if self.mode == "frozen":
            gc.freeze()
        now = self._clock()
        if not self._released:
            if now - self._last < self._period_s:
                return False
            if self._heap_now() <= (1 + GROWTH) * self._heap:
                self._last = now  # looked: the next look is a period away
                return False
        self.collect()
        return True

    def stop(self) -> None:
        """Stop measuring and steering: the collector as :meth:`start` found it, nothing frozen.

        A worker never stops its policy; a benchmark or a test in a process
        that goes on does.
        """
        self.meter.stop()
        if self._found is not None:
            threshold, enabled = self._found
            gc.set_threshold(*threshold)
            if enabled:
                gc.enable()
            self._found = None
        gc.unfreeze()

    def _heap_now(self) -> int:
        """Tracked objects now: the frozen ones and, with the collector off, those since."""
        return gc.get_freeze_count() + (gc.get_count()[0] if self.mode == "off" else 0)

    def collect(self) -> None:
        """A whole collection now: every object, frozen ones too; then everything is frozen."""
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self._heap = max(MIN_HEAP, gc.get_freeze_count())
        self._last = self._clock()
        self._released = False
        self.whole_collections += 1
        self.whole_found += found
        logger.debug("whole collection heap=%d found=%d", self._heap, found)

    def cpu_share(self) -> float:
        """The collections' share of the process's CPU time since :meth:`start`."""
        cpu_s = time.process_time() - self._started_cpu
        return self.meter.reading().cpu_seconds / cpu_s if cpu_s > 0 else 0.0


def log_gc(policy: HeapPolicy) -> None:
    """Log what the collections cost since `policy` started (a worker does so as it ends).

    ``gc mode=frozen seconds=1.234 cpu_share=0.0310 collections=812/3/0 collected=0 whole=2
    whole_found=0`` (``seconds`` of wall time, ``cpu_share`` of the process's CPU time):
    benchmarks read this line from a worker's log.
    """
    reading = policy.meter.reading()
    logger.info(
        "gc mode=%s seconds=%.3f cpu_share=%.4f collections=%d/%d/%d collected=%d whole=%d "
        "whole_found=%d",
        policy.mode,
        reading.total_seconds,
        policy.cpu_share(),
        *reading.collections,
        reading.collected,
        policy.whole_collections,
        policy.whole_found,
    )
