"""The cyclic garbage collector's time and collections per generation, measured in a process.

Not pure: it hooks :data:`gc.callbacks` and reads a monotonic clock
(``time.perf_counter``) and the thread's CPU clock at the start and the stop
of each collection. A
:class:`GcMeter` adds up, per generation (0, 1, 2), the seconds collections
took and how many ran, automatic and explicit alike; :meth:`GcMeter.reading`
is a :class:`GcReading` that benchmarks subtract and report against the time
they measured. The callback touches only this object's numbers: a collection
can start in any thread, inside any lock, so it takes none.

Example: ``meter.start(); work(); meter.stop()``, then
``meter.reading().figures(wall_s)`` is
``{"seconds": 0.42, "share": 0.12, "collections": [310, 15, 1], "collected": 0}``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

#: The collector's generations: 0 and 1 the young, 2 the whole heap (frozen objects aside).
GENERATIONS: Final = 3

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class GcReading:
    """What the collector cost up to a moment, per generation.

    Attributes:
        seconds: Seconds spent collecting each generation (the meter's clock).
        collections: Collections of each generation.
        collected: Unreachable objects the collections found (cyclic garbage).
        cpu_seconds: CPU seconds the collections took, every generation
            together (the collecting thread's CPU time): what a process's
            CPU share compares, where the wall time of a collection also
            counts the time the machine gave to others.
    """

    seconds: tuple[float, float, float] = (0.0, 0.0, 0.0)
    collections: tuple[int, int, int] = (0, 0, 0)
    collected: int = 0
    cpu_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        """Seconds spent collecting, every generation together."""
        return sum(self.seconds)

    def since(self, earlier: GcReading) -> GcReading:
        """What the collector cost between `earlier` and this reading."""
        return GcReading(
            seconds=_three(a - b for a, b in zip(self.seconds, earlier.seconds, strict=True)),
            collections=_three(
                a - b for a, b in zip(self.collections, earlier.collections, strict=True)
            ),
            collected=self.collected - earlier.collected,
            cpu_seconds=self.cpu_seconds - earlier.cpu_seconds,
        )

    def plus(self, other: GcReading) -> GcReading:
        """This reading's figures and `other`'s added up."""
        return GcReading(
            seconds=_three(a + b for a, b in zip(self.seconds, other.seconds, strict=True)),
            collections=_three(
                a + b for a, b in zip(self.collections, other.collections, strict=True)
            ),
            collected=self.collected + other.collected,
            cpu_seconds=self.cpu_seconds + other.cpu_seconds,
        )

    def share(self, wall_s: float) -> float:
        """The share of `wall_s` seconds the collections took (0 when `wall_s` is not positive)."""
        return self.total_seconds / wall_s if wall_s > 0 else 0.0

    def figures(self, wall_s: float) -> dict[str, Any]:
        """What benchmarks report: seconds, share, collections per generation, collected.

        `share` is the collections' seconds over `wall_s`, the time the
        benchmark measured (which includes them); `collected` the cyclic
        garbage they found.
        """
        return {
            "seconds": round(self.total_seconds, 4),
            "share": round(self.share(wall_s), 4),
            "collections": list(self.collections),
            "collected": self.collected,
        }


def _three(values: Iterable[_T]) -> tuple[_T, _T, _T]:
    """Exactly three values as a tuple, one per generation."""
    first, second, third = values
    return (first, second, third)


class GcMeter:
    """Adds up the collections of this process between :meth:`start` and :meth:`stop`."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        """A stopped meter reading `clock` (monotonic) around each collection."""
        self._clock = clock
        self._seconds = [0.0] * GENERATIONS
        self._collections = [0] * GENERATIONS
        self._collected = 0
        self._cpu_seconds = 0.0
        self._began: tuple[float, float] | None = None

    def start(self) -> None:
        """Measure from now on (idempotent)."""
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)

    def stop(self) -> None:
        """Measure no more; the figures so far stay."""
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        self._began = None

    def reading(self) -> GcReading:
        """The collections so far."""
        return GcReading(
            seconds=_three(self._seconds),
            collections=_three(self._collections),
            collected=self._collected,
            cpu_seconds=self._cpu_seconds,
        )

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = (self._clock(), time.thread_time())
            return
        if self._began is None:  # started between a collection's start and its stop
            return
        generation = info["generation"]
        began, began_cpu = self._began
        self._seconds[generation] += self._clock() - began
        self._cpu_seconds += time.thread_time() - began_cpu
        self._collections[generation] += 1
        self._collected += info.get("collected", 0)
        self._began = None
