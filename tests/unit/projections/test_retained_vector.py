"""A retained vector: positions keep their meaning, and a released one is named when asked for.

The expectations are hand-computed from the six letters ``a`` .. ``f`` with
the first two released (positions 0 and 1 gone, 2 .. 5 held).
"""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from projections.retention.retained_vector import NeedsHistory, RetainedVector, retained_vector


def _released() -> RetainedVector[str]:
    """``a`` .. ``f`` with ``a`` and ``b`` (positions 0 and 1) released."""
    return retained_vector(list("abcdef")).released(2)


def test_needs_history_names_what_was_asked_for() -> None:
    error = NeedsHistory("position 3")
    assert error.what == "position 3"
    assert str(error) == "position 3 was released by retention: rebuild the projection from the log"


def test_a_released_position_is_named_in_what_it_raises() -> None:
    vector = _released()
    with pytest.raises(NeedsHistory) as item:
        vector[1]
    assert item.value.what == "position 1"
    with pytest.raises(NeedsHistory) as counted_back:
        vector[-6]
    assert counted_back.value.what == "position 0"
    with pytest.raises(NeedsHistory) as sliced:
        vector[1:4]
    assert sliced.value.what == "position 1"


def test_position_zero_of_a_released_vector_asks_for_history_not_an_index_error() -> None:
    vector = _released()
    for index in (0, -6):
        with pytest.raises(NeedsHistory):
            vector[index]


def test_an_index_past_either_end_raises_index_error_with_that_index() -> None:
    vector = _released()
    with pytest.raises(IndexError) as below:
        vector[-7]
    assert below.value.args == (-7,)
    with pytest.raises(IndexError):
        vector[6]


def test_an_empty_slice_below_the_held_items_reads_nothing_released() -> None:
    vector = _released()
    assert list(vector[0:0]) == []
    assert list(vector[1:1]) == []
    assert list(vector[1:0]) == []
    assert list(vector[2:2]) == []
    with pytest.raises(NeedsHistory):
        vector[0:2]


def test_a_slice_with_another_step_is_refused_with_its_reason() -> None:
    vector = retained_vector(list("abc"))
    for step in (2, -1):
        with pytest.raises(ValueError, match="step 1 only") as raised:
            vector[::step]
        assert str(raised.value) == "a retained vector slices with step 1 only"


def test_iterating_a_released_vector_names_position_zero() -> None:
    with pytest.raises(NeedsHistory) as raised:
        iter(_released())
    assert raised.value.what == "position 0"


def test_walking_back_past_the_held_items_names_the_newest_released_position() -> None:
    walk = reversed(_released())
    assert [next(walk) for _ in range(4)] == ["f", "e", "d", "c"]
    with pytest.raises(NeedsHistory) as raised:
        next(walk)
    assert raised.value.what == "position 1"


def test_vectors_are_equal_only_when_first_and_tail_both_are() -> None:
    tail = pvector([1, 2])
    assert RetainedVector(tail, 3) == RetainedVector(pvector([1, 2]), 3)
    assert RetainedVector(tail, 3) != RetainedVector(tail, 4)
    assert RetainedVector(tail, 3) != RetainedVector(pvector([1, 3]), 3)
    assert RetainedVector(pvector([1, 3]), 4) != RetainedVector(tail, 3)
    assert RetainedVector(tail) != [1, 2]


def test_equal_vectors_hash_alike_and_different_ones_spread() -> None:
    assert hash(RetainedVector(pvector([1, 2]), 3)) == hash(RetainedVector(pvector([1, 2]), 3))
    different = {
        hash(RetainedVector(pvector(items), first))
        for items in ([], [1], [2], [1, 2])
        for first in (0, 1, 2)
    }
    assert len(different) > 1


def test_repr_shows_how_many_went_and_the_held_items() -> None:
    assert repr(_released()) == "RetainedVector(first=2, tail=['c', 'd', 'e', 'f'])"
    assert repr(RetainedVector()) == "RetainedVector(first=0, tail=[])"


def test_a_vector_of_a_persistent_vector_shares_it_and_of_a_list_copies_it() -> None:
    items = pvector(["a", "b"])
    assert retained_vector(items).tail is items
    listed = ["a", "b"]
    vector = retained_vector(listed)
    listed.append("c")
    assert list(vector) == ["a", "b"]
