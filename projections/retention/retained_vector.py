"""A vector that may have let its oldest items go, and says so when they are asked for. Pure.

A session's log keeps its records in stream order, and a position into it
names the same record for as long as the session lives. Once compaction has
moved past a prefix of the log, nothing the fold, the decision or a read of
the view's context normally does reads that prefix again
(:mod:`projections.retention.log_retention`), so the projection drops it: the vector keeps
:attr:`RetainedVector.first` (how many items went) and the items after them,
and every position keeps its meaning.

A reader that still asks for a dropped item (a rewind recomputing the live
list, a decision that falls back to the whole list, a read for another
agent) gets :class:`NeedsHistory` instead of a wrong answer: the caller then
rebuilds the projection from the session's records on the log and asks
again. A vector that dropped nothing behaves as a plain one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

from pyrsistent import PVector, pvector

T = TypeVar("T")


class NeedsHistory(LookupError):
    """Something the projection let go was asked for: rebuild it from the log and retry.

    Attributes:
        what: What was asked for.
    """

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} was released by retention: rebuild the projection from the log")
        self.what = what


class RetainedVector(Sequence[T]):
    """Persistent items at positions ``first .. first + len(tail) - 1``; those below are gone.

    Immutable: :meth:`append` and :meth:`released` return new vectors.
    """

    __slots__ = ("first", "tail")

    first: int
    tail: PVector[T]

    def __init__(self, tail: PVector[T] | None = None, first: int = 0) -> None:
        self.first = first
        self.tail = tail if tail is not None else pvector()

    def __len__(self) -> int:
        return self.first + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> PVector[T]: ...

    def __getitem__(self, index: int | slice) -> T | PVector[T]:
        """The item at `index` (negative counts from the end), or a slice of held items.

        Raises:
            NeedsHistory: The position, or the slice's start, was released.
            IndexError: The position is past the end.
        """
        first = self.first
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a retained vector slices with step 1 only")
            if start < first and start < stop:
                raise NeedsHistory(f"position {start}")
            return self.tail[max(start - first, 0) : max(stop - first, 0)]
        position = index + len(self) if index < 0 else index
        if position < first:
            if position < 0:
                raise IndexError(index)
            raise NeedsHistory(f"position {position}")
        return self.tail[position - first]

    def __iter__(self) -> Iterator[T]:
        """Every item from position 0.

        Raises:
            NeedsHistory: Items were released (before anything is yielded).
        """
        if self.first:
            raise NeedsHistory("position 0")
        return iter(self.tail)

    def __reversed__(self) -> Iterator[T]:
        """The items newest first; a walk that goes on past the held ones raises NeedsHistory."""
        yield from reversed(self.tail)
        if self.first:
            raise NeedsHistory(f"position {self.first - 1}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetainedVector):
            return NotImplemented
        return self.first == other.first and self.tail == other.tail

    def __hash__(self) -> int:
        return hash((self.first, self.tail))

    def __repr__(self) -> str:
        return f"RetainedVector(first={self.first}, tail={list(self.tail)!r})"

    def append(self, item: T) -> RetainedVector[T]:
        """This vector with `item` at the end."""
        return RetainedVector(self.tail.append(item), self.first)

    def released(self, first: int) -> RetainedVector[T]:
        """This vector without the items before position `first` (no-op if none more go).

        O(items kept).
        """
        if first <= self.first:
            return self
        return RetainedVector(self.tail[first - self.first :], first)


def retained_vector(items: PVector[T] | list[T]) -> RetainedVector[T]:
    """A vector holding every one of `items`."""
    return RetainedVector(items if isinstance(items, PVector) else pvector(items))
