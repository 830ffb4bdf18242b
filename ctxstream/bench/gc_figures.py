"""The collector a fold benchmark runs under (``--gc``), and what its collections cost.

Not pure: it steers and measures this process's :mod:`gc`
(:class:`schemas.heap.heap_policy.HeapPolicy`). ``--gc`` picks the policy:
the worker's (the default: its settings' ``gc_mode``), one of the modes
with the worker's thresholds, or ``python`` (Python's own rules, as a
process that sets nothing). :class:`BenchGc` adds up the collections inside
the timed calls only, so that ``share`` is of the time the figures report,
and times one collection of everything the run holds at its end: what a
whole collection would cost the worker at that heap.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any, Final

from schemas.heap.gc_meter import GcReading
from schemas.heap.heap_policy import GC_MODES, HeapPolicy
from streams.projector_settings import ProjectorSettings

#: Python's own thresholds: a process that never calls ``gc.set_threshold``.
PYTHON_THRESHOLD: Final = (700, 10, 10)
#: ``--gc`` choices: the heap policy's modes, and Python's rules.
GC_CHOICES: Final = (*GC_MODES, "python")


def add_gc_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--gc`` to a fold benchmark's parser."""
    parser.add_argument(
        "--gc",
        choices=GC_CHOICES,
        default=None,
        help="the collector's policy: a gc_mode with the worker's thresholds, or python "
        "(Python's rules, as before any tuning); default: the worker's settings",
    )


def bench_heap(choice: str | None, settings: ProjectorSettings) -> HeapPolicy:
    """The policy `choice` names (None: the worker's, from `settings`), not started."""
    if choice is None:
        return settings.heap_policy()
    if choice == "python":
        return HeapPolicy("automatic", PYTHON_THRESHOLD, settings.gc_period_s)
    mode = next(mode for mode in GC_MODES if mode == choice)
    return HeapPolicy(mode, settings.gc_threshold, settings.gc_period_s)


class BenchGc:
    """One run's collector, steered as the worker's and measured in the timed calls.

    :meth:`start`, then :meth:`begin` and :meth:`end` around each timed call,
    :meth:`settle` after each batch, :meth:`figures` at the end, :meth:`stop`.
    """

    def __init__(self, choice: str | None, settings: ProjectorSettings) -> None:
        """The policy `choice` names (``--gc``; None: the worker's, from `settings`)."""
        self.name = choice or settings.gc_mode
        self.policy = bench_heap(choice, settings)
        self._before = GcReading()
        self.reading = GcReading()

    def start(self) -> None:
        """Collect what the set-up left, then start the policy: every run starts alike."""
        gc.collect()
        self.policy.start()

    def settle(self) -> None:
        """After a batch, as the worker does."""
        self.policy.settle()

    def begin(self) -> None:
        """A timed call starts."""
        self._before = self.policy.meter.reading()

    def end(self) -> None:
        """The timed call ended: its collections join :attr:`reading`."""
        self.reading = self.reading.plus(self.policy.meter.reading().since(self._before))

    def figures(self, wall_s: float) -> dict[str, Any]:
        """The ``"gc"`` figures of the run, whose timed calls took `wall_s`.

        ``{"policy", "seconds", "share", "collections": [g0, g1, g2], "collected",
        "whole_collections", "whole_s", "heap_objects"}``: the timed calls'
        collections, the whole collections the policy ran, and the seconds
        one collection of every object (frozen ones too) takes now, with the
        tracked objects it walks. Unfreezes: call it once the run is over.
        """
        gc.unfreeze()
        heap = len(gc.get_objects())
        started = time.perf_counter()
        gc.collect()
        whole_s = time.perf_counter() - started
        return {
            "policy": self.name,
            **self.reading.figures(wall_s),
            "whole_collections": self.policy.whole_collections,
            "whole_s": round(whole_s, 4),
            "heap_objects": heap,
        }

    def stop(self) -> None:
        """Give the collector back as it was (:meth:`HeapPolicy.stop`)."""
        self.policy.stop()
