"""The cut vector against a plain list: every splice, index, search and comparison.

The oracle is a Python list spliced with slice assignment (``items[start:stop] = [item]``);
the searches are :mod:`bisect` over that list.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pvector

from projections.compaction.cut_vector import STALE_SLACK, CutVector

#: (start, stop, item) as fractions of the length, so every draw is a valid splice.
_SPLICES = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(-50, 50)), max_size=120)


def _bounds(length: int, low: float, high: float) -> tuple[int, int]:
    start, stop = sorted((int(low * length), int(high * length)))
    return start, stop


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=20), _SPLICES)
def test_splices_equal_a_list_spliced_in_place(
    initial: list[int], splices: list[tuple[float, float, int]]
) -> None:
    vector = CutVector.of(initial)
    model = list(initial)
    for low, high, item in splices:
        start, stop = _bounds(len(model), low, high)
        vector = vector.spliced(start, stop, item)
        model[start:stop] = [item]
        assert list(vector) == model
        assert len(vector) == len(model)
        assert vector == CutVector.of(model)
        assert [vector[i] for i in range(-len(model), len(model))] == model + model
        # Stale items never outnumber the live ones by more than the slack.
        assert len(vector.items) - len(vector) <= len(vector) + STALE_SLACK


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-20, 20), max_size=40), st.integers(-25, 25), st.data())
def test_searches_equal_bisect_over_the_live_items(
    values: list[int], probe: int, data: st.DataObject
) -> None:
    ordered = sorted(values)
    # The same live items with stale ones after them: a cut that left larger items behind.
    vector = CutVector.of([*ordered, 99, 99])
    if ordered:
        vector = vector.spliced(len(ordered) - 1, len(ordered) + 2, ordered[-1])
    else:
        vector = CutVector(pvector([99, 99]), 0)
    assert list(vector) == ordered
    assert vector.bisect_left(probe) == bisect.bisect_left(ordered, probe)
    assert vector.bisect_right(probe) == bisect.bisect_right(ordered, probe)
    low = data.draw(st.integers(0, len(ordered)))
    assert vector.bisect_right(probe, low) == bisect.bisect_right(ordered, probe, low)


def test_a_cut_at_the_end_keeps_the_vector_and_a_cut_in_the_middle_copies_it() -> None:
    vector = CutVector.of([1, 3, 5, 7])
    tail = vector.spliced(2, 4, 4)
    assert list(tail) == [1, 3, 4]
    assert list(tail.items) == [1, 3, 4, 7]  # 7 is stale, past the length
    assert tail == CutVector.of([1, 3, 4])
    assert tail != CutVector.of([1, 3, 4, 7])
    assert tail != CutVector.of([1, 3, 5])
    middle = vector.spliced(1, 2, 2)
    assert list(middle.items) == [1, 2, 5, 7]
    assert len(middle) == 4
    assert vector.spliced(4, 4, 9) == CutVector.of([1, 3, 5, 7, 9])
    assert tail.spliced(3, 3, 8).items == pvector([1, 3, 4, 8])  # the stale 7 is overwritten


def test_stale_items_are_dropped_once_they_outnumber_the_live_ones() -> None:
    long = CutVector.of(range(2 * STALE_SLACK + 10))
    kept = long.spliced(3, len(long), -1)
    assert list(kept) == [0, 1, 2, -1]
    assert list(kept.items) == [0, 1, 2, -1]
    few = CutVector.of(range(STALE_SLACK + 8))
    assert len(few.spliced(3, len(few), -1).items) == len(few)  # within the slack: left


def test_a_bad_index_or_splice_is_refused() -> None:
    vector = CutVector.of([1, 3, 5, 7]).spliced(2, 4, 4)  # live [1, 3, 4], stale 7
    with pytest.raises(IndexError):
        vector[3]
    with pytest.raises(IndexError):
        vector[-4]
    assert vector[-3] == 1
    for start, stop in ((-1, 0), (2, 1), (0, 4)):
        with pytest.raises(IndexError):
            vector.spliced(start, stop, 0)
    assert vector.spliced(3, 3, 9) == CutVector.of([1, 3, 4, 9])
    assert (vector == [1, 3, 4]) is False
    assert repr(vector) == "CutVector.of([1, 3, 4])"
