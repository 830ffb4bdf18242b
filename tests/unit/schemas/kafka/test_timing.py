"""Timing headers: a stamp reads back as the time it says; anything else reads as None."""

from __future__ import annotations

import pytest

from schemas.kafka.timing import BUILT, READ, TAKEN, stamp, stamped


def test_a_stamp_reads_back_to_the_microsecond() -> None:
    header = stamp(TAKEN, 1_764_000_000.123456)
    assert header == ("ctxstream-taken", b"1764000000.123456")
    assert stamped([("other", b"1.0"), header], TAKEN) == 1_764_000_000.123456


def test_each_name_reads_its_own_header_and_the_first_one_counts() -> None:
    headers = [stamp(READ, 2.0), stamp(TAKEN, 1.0), stamp(TAKEN, 9.0)]
    assert (stamped(headers, TAKEN), stamped(headers, READ), stamped(headers, BUILT)) == (
        1.0,
        2.0,
        None,
    )
    assert stamped(None, TAKEN) is None
    assert stamped((), TAKEN) is None


@pytest.mark.parametrize("value", [b"", b"soon", b"nan", b"inf", b"-inf", b"\xff\xfe", b"1e999"])
def test_a_header_that_is_no_finite_time_reads_as_missing(value: bytes) -> None:
    assert stamped([(TAKEN, value)], TAKEN) is None
