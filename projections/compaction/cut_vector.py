"""A persistent vector cut back at a position and extended there: a sorted run kept cheaply. Pure.

A persistent vector appends and sets one item in O(log n) but copies itself to
drop its last items. A :class:`CutVector` keeps a length beside the vector
instead: cutting it back is a new length, and the next item is set where the
cut fell. So replacing the run at the end of the vector costs O(log n), which
is what the summary chain does for a summary newer than every earlier one
(:mod:`projections.compaction.summary_chain`); replacing a run in the middle
copies the vector, O(n). Items past the length are stale: never read, and
dropped once they outnumber the live ones (a copy paid for by the cuts that
left them).

Example: ``CutVector.of([1, 3, 5, 7]).spliced(2, 4, 4)`` -> ``[1, 3, 4]``, the
vector still holding ``7`` past its length until something overwrites it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from pyrsistent import PVector, pvector

T = TypeVar("T")

#: Stale items a vector may hold beyond as many as its live ones before it is copied.
STALE_SLACK: Final = 32


@dataclass(frozen=True, slots=True, eq=False)
class CutVector(Generic[T]):
    """The first `length` items of `items`; those after are stale.

    Equal to another cut vector with the same live items, whatever is stale.

    Attributes:
        items: The items, live ones first.
        length: How many are live.
    """

    items: PVector[T] = field(default_factory=pvector)
    length: int = 0

    @classmethod
    def of(cls, items: Iterable[T]) -> CutVector[T]:
        """A vector of exactly `items`, none stale."""
        vector: PVector[T] = pvector(items)
        return cls(vector, len(vector))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> T:
        position = index + self.length if index < 0 else index
        if not 0 <= position < self.length:
            raise IndexError(f"index {index} out of a vector of {self.length}")
        return self.items[position]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self.items, self.length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CutVector):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal vectors may differ in stale items

    def __repr__(self) -> str:
        return f"CutVector.of({list(self)!r})"

    def bisect_left(self, value: Any) -> int:
        """The first live position whose item is not below `value` (items sorted)."""
        return bisect.bisect_left(self.items, value, 0, self.length)

    def bisect_right(self, value: Any, low: int = 0) -> int:
        """The first live position at or after `low` whose item is above `value` (items sorted)."""
        return bisect.bisect_right(self.items, value, low, self.length)

    def spliced(self, start: int, stop: int, item: T) -> CutVector[T]:
        """These items with those at positions ``start .. stop - 1`` replaced by `item`.

        O(log n) when `stop` is the length (the run at the end), else O(n).

        Raises:
            IndexError: Not ``0 <= start <= stop <= len(self)``.
        """
        if not 0 <= start <= stop <= self.length:
            raise IndexError(f"cannot replace {start}..{stop} of a vector of {self.length}")
        if stop < self.length:  # a run in the middle: copy the live items
            live = self.items
            return CutVector.of([*live[:start], item, *live[stop : self.length]])
        items = self.items
        items = items.set(start, item) if start < len(items) else items.append(item)
        length = start + 1
        if len(items) - length > length + STALE_SLACK:
            items = items[:length]
        return CutVector(items, length)
