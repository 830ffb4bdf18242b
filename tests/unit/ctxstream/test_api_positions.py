"""Subscription positions as SSE ids: written, read back, resolved against the topic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstream.api.positions import format_position, parse_position, parse_start, start_offsets
from ctxstream.errors import InvalidArgumentError
from schemas.json_bounds import INT64_MAX

BEGINNINGS = {0: 0, 1: 5}
ENDS = {0: 10, 1: 20}


def test_a_position_is_written_in_partition_order() -> None:
    assert format_position({2: 0, 0: 17, 1: 42}) == "0:17,1:42,2:0"


@given(st.dictionaries(st.integers(0, 9_999), st.integers(0, INT64_MAX), min_size=1, max_size=50))
def test_a_written_position_reads_back_equal(position: dict[int, int]) -> None:
    assert parse_position(format_position(position), name="id") == position


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "pairs"),
        ("0:1,", "pairs"),
        ("0=1", "pairs"),
        ("-1:0", "pairs"),
        ("0:1,0:2", "named twice"),
        ("0:99999999999999999999", "pairs"),
        (f"0:{INT64_MAX + 1}", "past any offset"),
        ("0:1;1:2", "pairs"),
        ("0:\uff11", "pairs"),
    ],
)
def test_a_malformed_position_is_refused_naming_its_source(text: str, named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=named) as refused:
        parse_position(text, name="Last-Event-ID")
    assert str(refused.value).startswith("Last-Event-ID: ")


def test_a_start_is_an_offset_of_every_partition_or_a_position() -> None:
    assert parse_start("0", name="from_offset") == 0
    assert parse_start("42", name="from_offset") == 42
    assert parse_start("0:3,1:4", name="from_offset") == {0: 3, 1: 4}
    with pytest.raises(InvalidArgumentError, match=r"^from_offset: "):
        parse_start("-1", name="from_offset")
    with pytest.raises(InvalidArgumentError, match="past any offset"):
        parse_start(str(INT64_MAX + 1), name="from_offset")


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (None, {0: 10, 1: 20}),  # from now on: the ends
        (0, {0: 0, 1: 5}),  # from the beginning: partition 1 was compacted below 5
        (7, {0: 7, 1: 7}),
        (30, {0: 10, 1: 20}),  # past the ends (a topic made anew): the ends
        ({0: 3}, {0: 3, 1: 5}),  # a partition left out: from its beginning
        ({0: 30, 1: 2}, {0: 10, 1: 5}),
    ],
)
def test_a_start_is_held_between_each_partitions_beginning_and_end(
    start: int | dict[int, int] | None, expected: dict[int, int]
) -> None:
    assert start_offsets(start, BEGINNINGS, ENDS, name="from_offset") == expected


def test_a_start_naming_a_partition_the_topic_lacks_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^Last-Event-ID: partition 5 is not one"):
        start_offsets({5: 0}, BEGINNINGS, ENDS, name="Last-Event-ID")
