"""The surviving summaries and their coverage, kept as summaries arrive (§3.2, §3.3). Pure.

What :func:`~projections.compaction.masking.surviving_summary_positions` and
:func:`~projections.compaction.masking.coverage` compute from a whole list,
kept one summary at a time without reading the earlier ones again.

* **The chain.** No survivor's range contains another's, so among ranges
  without a NaN bound, sorted by start, the survivors' ends rise too. A new
  range ``[s, e]`` is hidden iff the last survivor starting at or before ``s``
  ends at or after ``e`` and is not the very same range (of identical ranges
  the one appended last survives); otherwise it joins the chain where ``s``
  falls and hides the run of survivors from there that end at or before ``e``.
  A range with a NaN bound always survives and hides nothing; one ending at
  ``-inf`` never survives (masking's sweep keeps ends above the widest so far,
  which starts there).
* **The coverage** is the union of the survivors' ranges, which is the union of
  every range noted (a hidden range lies inside the one that hides it), so a
  new range is merged into the sorted intervals it meets (closed intervals:
  touching ones merge). Inverted and NaN ranges cover nothing.

Both are binary searches and one replacement of a run. A summary whose range
ends above every earlier one (the pipeline's summaries, an agent whose clock
moves forward) replaces runs at the ends of the vectors: O(log n). Any other
copies the vectors (:class:`~projections.compaction.cut_vector.CutVector`), O(n)
at C speed, never a sort or a Python-level walk of the survivors.

Example: ``[100, 103]``, then ``[102, 108]`` -> both survive, coverage
``[100, 108]``; then ``[100, 108]`` -> it alone survives, coverage unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from pyrsistent import PVector, pvector

from projections.compaction.cut_vector import CutVector
from projections.compaction.masking import Coverage

T = TypeVar("T")


class Noted(NamedTuple, Generic[T]):
    """A chain after one more summary, and what the summary did.

    Attributes:
        chain: The chain after it.
        survives: The new summary survives.
        hidden: The survivors it hides, by start.
    """

    chain: SummaryChain[T]
    survives: bool
    hidden: list[T]


@dataclass(frozen=True, slots=True)
class SummaryChain(Generic[T]):
    """Surviving summaries (items of the caller's choice) and the union of their ranges.

    Attributes:
        items: The survivors without a NaN bound, by start.
        starts: Their range starts, rising.
        ends: Their range ends, rising.
        unranged: The survivors with a NaN bound, in the order they came.
        newest: The survivor that came last (None: none).
        covered_starts: The coverage's disjoint closed intervals, sorted: their starts.
        covered_ends: Their ends.
    """

    items: CutVector[T] = field(default_factory=CutVector)
    starts: CutVector[float] = field(default_factory=CutVector)
    ends: CutVector[float] = field(default_factory=CutVector)
    unranged: PVector[T] = field(default_factory=pvector)
    newest: T | None = None
    covered_starts: CutVector[float] = field(default_factory=CutVector)
    covered_ends: CutVector[float] = field(default_factory=CutVector)

    def __len__(self) -> int:
        return len(self.items) + len(self.unranged)

    def __iter__(self) -> Iterator[T]:
        """The survivors: by start, then those with a NaN bound."""
        yield from self.items
        yield from self.unranged

    @property
    def coverage(self) -> Coverage:
        """The coverage as :func:`~projections.compaction.masking.coverage` gives it. O(n)."""
        return Coverage(tuple(self.covered_starts), tuple(self.covered_ends))

    def covers(self, timestamp: float) -> bool:
        """Whether `timestamp` lies in the coverage (a NaN never does). O(log n)."""
        slot = self.covered_starts.bisect_right(timestamp) - 1
        return slot >= 0 and timestamp <= self.covered_ends[slot]

    def same_coverage(self, other: SummaryChain[T]) -> bool:
        """Whether `other` shares this chain's coverage (same vectors: no range widened it)."""
        return (
            self.covered_starts is other.covered_starts and self.covered_ends is other.covered_ends
        )

    def noted(self, item: T, start: float, end: float) -> Noted[T]:
        """The chain after one more summary `item` ranging over ``[start, end]``."""
        if math.isnan(start) or math.isnan(end):
            return Noted(_with(self, unranged=self.unranged.append(item), newest=item), True, [])
        if end == -math.inf:  # masking's sweep keeps only ends above -inf: never a survivor
            return Noted(self, False, [])
        starts, ends = self.starts, self.ends
        before = starts.bisect_right(start) - 1  # the last survivor starting at or before it
        if before >= 0 and ends[before] >= end and (starts[before], ends[before]) != (start, end):
            return Noted(self, False, [])  # contained in another range
        first = starts.bisect_left(start)
        stop = ends.bisect_right(end, first)  # ends rise: the run it contains
        hidden = [self.items[position] for position in range(first, stop)]
        covered_starts, covered_ends = _covered(self, start, end)
        chain = SummaryChain(
            self.items.spliced(first, stop, item),
            starts.spliced(first, stop, start),
            ends.spliced(first, stop, end),
            self.unranged,
            item,
            covered_starts,
            covered_ends,
        )
        return Noted(chain, True, hidden)


def _with(chain: SummaryChain[T], *, unranged: PVector[T], newest: T) -> SummaryChain[T]:
    return SummaryChain(
        chain.items,
        chain.starts,
        chain.ends,
        unranged,
        newest,
        chain.covered_starts,
        chain.covered_ends,
    )


def _covered(
    chain: SummaryChain[T], start: float, end: float
) -> tuple[CutVector[float], CutVector[float]]:
    """The coverage's vectors with ``[start, end]`` merged in (the same ones if it adds nothing)."""
    starts, ends = chain.covered_starts, chain.covered_ends
    if not start <= end:  # inverted: covers nothing
        return starts, ends
    low = ends.bisect_left(start)  # the first interval ending at or after `start`
    high = starts.bisect_right(end)  # the first interval starting after `end`
    if high - low == 1 and starts[low] <= start and end <= ends[low]:
        return starts, ends  # inside one interval already
    if low < high:
        start, end = min(start, starts[low]), max(end, ends[high - 1])
    return starts.spliced(low, high, start), ends.spliced(low, high, end)


def summary_chain(summaries: list[tuple[T, float, float]]) -> SummaryChain[T]:
    """The chain of `summaries` ((item, start, end), stream order), noted one by one."""
    chain: SummaryChain[T] = SummaryChain()
    for item, start, end in summaries:
        chain = chain.noted(item, start, end).chain
    return chain
